import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

@Suite("Containers: checked like ssh checks its keys", .throttled)
struct ContainerTests {
    private func code(_ body: () throws -> Void) -> WormholeError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? WormholeError)?.code
        }
    }

    @Test("a missing container is created 0700; its files and sockets are 0600")
    func modes() throws {
        let parent = TemporaryContainer()
        let path = parent.path + "/group"
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: path))
        center.addObserver(forName: .init("m"), object: nil, queue: nil) { _ in }
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
        }
        #expect(try mode(path) == 0o700)
        let status = try #require(center.listenerStatus().first)
        for folder in ["registry", "listeners", "spool", "retained", "spool/\(status.identifier)"] {
            #expect(try mode(path + "/" + folder) == 0o700, "\(folder)")
        }
        for file in ["layout", "registry.changes", "registry/\(status.identifier)", "spool/\(status.identifier)/bell"] {
            #expect(try mode(path + "/" + file) == 0o600, "\(file)")
        }
        #expect(try mode(status.socketPath) == 0o600)
    }

    @Test("a container writable by group or others is refused")
    func writableByOthers() throws {
        let container = TemporaryContainer()
        chmod(container.path, 0o777)
        #expect(code { _ = try GroupNotificationCenter(containerURL: container.url) } == .insecureContainer)
        chmod(container.path, 0o770)
        #expect(code { _ = try GroupNotificationCenter(containerURL: container.url) } == .insecureContainer)
        chmod(container.path, 0o700)
        #expect(code { _ = try GroupNotificationCenter(containerURL: container.url) } == nil)
    }

    @Test("a container owned by another user is refused")
    func ownedByAnother() throws {
        try #require(geteuid() == 0, "needs root to give a folder away; skipped otherwise")
        let container = TemporaryContainer()
        chown(container.path, 65534, 65534)
        defer { chown(container.path, 0, 0) }
        #expect(code { _ = try GroupNotificationCenter(containerURL: container.url) } == .insecureContainer)
    }

    @Test("a file where the container should be is refused, and so is a missing parent folder")
    func notADirectory() throws {
        let parent = TemporaryContainer()
        let file = parent.path + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(code { _ = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: file)) } == .invalidContainer)
        #expect(code { _ = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: parent.path + "/a/b/c")) } == .invalidContainer)
    }

    @Test("a group identifier that cannot name a folder is refused")
    func badGroup() {
        #expect(code { _ = try GroupNotificationCenter(groupIdentifier: "../etc") } == .invalidContainer)
        #expect(code { _ = try GroupNotificationCenter(groupIdentifier: "") } == .invalidContainer)
    }

    @Test("the default container follows WORMHOLE_CONTAINER_ROOT, then XDG_RUNTIME_DIR")
    func defaultContainer() async throws {
        let root = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--group", "group.test", "--create", "--count", "1"], environment: ["WORMHOLE_CONTAINER_ROOT": root.path])
        try await listener.awaitError(containing: "listening")
        #expect(FileManager.default.fileExists(atPath: root.path + "/group.test/registry"))
        let runtime = TemporaryContainer()
        let poster = try Peer("wormhole", ["post", "--group", "group.test", "--create", "--name", "x"], environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(try await poster.awaitExit() == 0)
        #expect(FileManager.default.fileExists(atPath: runtime.path + "/wormhole/group.test"))
        listener.signal(SIGKILL)
    }

    @Test("a container path longer than sun_path allows still works across processes")
    func longPath() async throws {
        let parent = TemporaryContainer()
        var path = parent.path
        while path.utf8.count < 200 { path += "/a-rather-long-folder-name" }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", path, "--name", "long", "--count", "1"])
        try await listener.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: path))
        let report = try center.postReporting(name: .init("long"), object: nil, userInfo: ["i": 1])
        #expect(report.delivered == 1)
        #expect(try await listener.awaitExit() == 0)
    }

    @Test("posting re-reads the registry only when it changed")
    func registryCache() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "c"])
        try await listener.awaitLines(1)
        for i in 0..<200 { try center.postReporting(name: .init("c"), object: nil, userInfo: ["i": i]) }
        let parses = center.endpoint.registry.parses.load(ordering: .relaxed)
        #expect(parses == 1)
        let second = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "c"])
        try await second.awaitLines(1)
        let report = try center.postReporting(name: .init("c"), object: nil, userInfo: ["i": 0])
        // About 270 small messages fill a socket buffer, so a busy first listener may take it from its spool.
        #expect(report.delivered + report.spooled == 2)
        #expect(center.endpoint.registry.parses.load(ordering: .relaxed) == parses + 1)
    }
}
