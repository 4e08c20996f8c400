import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Crash consistency, collection of the dead, limits and who may talk", .throttled)
struct CrashConsistencyTests {
    @Test("a registry writer killed at any moment leaves entries the next reader reads whole")
    func registryWriterKilled() async throws {
        let container = TemporaryContainer()
        var generator = SeededGenerator(seed: 99)
        var checked = 0
        for _ in 0..<40 {
            // The chaos receiver rewrites the registry all the time: it adds and removes observers in a loop.
            let writer = try Peer("wormhole-chaos", ["receiver", "--container", container.path])
            try await writer.awaitLines(1)
            usleep(UInt32.random(in: 1_000...60_000, using: &generator))
            writer.signal(SIGKILL)
            _ = try? await writer.awaitExit()
            let folder = container.path + "/registry/"
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + name)))
                #expect(throws: Never.self) { _ = try RegistryFormat.decodeEntry(bytes) }
            }
            checked += 1
        }
        #expect(checked == 40)
    }

    @Test("a new process that gets a dead listener's pid never receives that listener's spool")
    func pidReuse() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("r"), object: nil, queue: nil, using: recorder.block)
        // A dead listener that had this very pid, with a notification waiting in its spool.
        let dead: UInt64 = 0x1234_5678_9abc_def0
        let stale = SpoolRecord.segment([Frame(poster: 1, sequence: 1, name: "r", object: "stale", userInfo: nil).encoded()])
        let folder = container.path + "/spool/" + RegistryEntry.spoolName(dead)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        #expect(FileManager.default.createFile(
            atPath: folder + "/0000000000000001-0000000000000001.seg", contents: Data(stale), attributes: [.posixPermissions: 0o600]))
        try center.endpoint.registry.write(RegistryEntry(listener: dead, pid: getpid(), subscriptions: [Subscription(name: "r", object: nil)]))
        let report = try center.postReporting(name: .init("r"), object: "fresh", userInfo: nil)
        #expect(report.removedDeadListeners == 1)
        #expect(try await recorder.wait(for: 1).map(\.object) == ["fresh"])
        #expect(!FileManager.default.fileExists(atPath: folder))
        let marker = Recorder()
        center.addObserver(forName: .init("end"), object: nil, queue: nil, using: marker.block)
        center.post(name: .init("end"), object: nil)
        try await marker.wait(for: 1)
        #expect(recorder.all.count == 1)
    }

    @Test("the container does not grow: 2,000 listener lifetimes and 30 killed processes leave only the living")
    func noGrowth() async throws {
        let container = TemporaryContainer()
        for _ in 0..<2000 {
            let center = try GroupNotificationCenter(containerURL: container.url)
            center.addObserver(forName: .init("g"), object: nil, queue: nil) { _ in }
        }
        let killed = try (0..<30).map { _ in try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "g"]) }
        for peer in killed { try await peer.awaitLines(1) }
        for peer in killed {
            peer.signal(SIGKILL)
            _ = try? await peer.awaitExit()
        }
        let survivor = try GroupNotificationCenter(containerURL: container.url)
        survivor.addObserver(forName: .init("g"), object: nil, queue: nil) { _ in }
        func count(_ folder: String) throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: container.path + "/" + folder).count
        }
        #expect(survivor.listenerStatus().count == 1)
        #expect(try count("listeners") == 1)
        #expect(try count("spool") == 1)
        #expect(try count("registry") == 1)
    }

    @Test("a spool that would pass its limit refuses the post for that listener, reported and counted")
    func spoolFull() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "full"])
        try await listener.awaitLines(1)
        try listener.suspend()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let blob = Data(count: 15 << 20)
        var failures: [PostReport.Failure] = []
        for _ in 0..<10 {
            failures += try center.postReporting(name: .init("full"), object: nil, userInfo: ["blob": blob]).failures
        }
        #expect(failures.count >= 1)
        #expect(failures.allSatisfy { $0.error.code == .spoolFull && $0.pid == listener.pid })
        #expect(center.statistics.failed == failures.count)
        let status = try #require(center.listenerStatus().first)
        #expect(status.spooledBytes <= GroupNotificationCenter.maximumSpoolSize)
        listener.signal(SIGKILL)
    }

    @Test("past the maximum number of listeners, a new observer is refused registration with a clear warning")
    func tooManyListeners() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let endpoint = center.endpoint
        // Fill the registry with live-looking listeners: real listening sockets, so nobody collects them.
        var sockets: [CInt] = []
        defer { sockets.forEach { close($0) } }
        for index in 0..<UInt64(GroupNotificationCenter.maximumListeners) {
            let id = 0xF000_0000_0000_0000 | index
            sockets.append(try UnixSocket.bind(
                .sequencedPacket, directory: endpoint.container.listenersDescriptor,
                directoryPath: endpoint.container.listenersPath, name: RegistryEntry.socketName(id)).release().rawValue)
            try endpoint.registry.write(RegistryEntry(listener: id, pid: 1, subscriptions: []))
        }
        let before = center.listenerStatus().count
        center.addObserver(forName: .init("one.too.many"), object: nil, queue: nil) { _ in }
        #expect(before == GroupNotificationCenter.maximumListeners)
        #expect(center.listenerStatus().count == GroupNotificationCenter.maximumListeners)
        #expect { _ = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "late") } throws: {
            ($0 as? WormholeError)?.code == .tooManyListeners
        }
    }

    @Test("another user can neither post into nor listen in a container, nor reach its sockets")
    func otherUser() async throws {
        try #require(geteuid() == 0, "needs root to run a process as another user; skipped otherwise")
        let tool = Peer.productsDirectory.appendingPathComponent("wormhole").path
        try #require(access("/usr/bin/setpriv", X_OK) == 0, "needs setpriv to change user; skipped otherwise")
        // The tool must be reachable by the other user; a build folder under a private home is not.
        let reachable = try Peer("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", tool, "help"], absolute: true)
        try #require(try await reachable.awaitExit() == 0, "the build folder is not readable by another user; skipped")

        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "x"])
        try await listener.awaitError(containing: "listening")
        for command in [["post", "--name", "x"], ["listen", "--name", "x", "--count", "1"], ["status"]] {
            let intruder = try Peer(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", tool] + command + ["--container", container.path],
                absolute: true)
            #expect(try await intruder.awaitExit() == 1, "\(command)")
            #expect(intruder.errorOutput.contains { $0.contains("container") })
        }
        listener.signal(SIGKILL)
    }
}
