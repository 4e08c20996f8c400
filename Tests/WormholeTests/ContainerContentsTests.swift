import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// What a container holds: its retained notifications' names and its group values' names, listed by the API and
/// by `wormhole retained --list` and `wormhole value --list`, with what others planted among them skipped.
@Suite("What a container holds", .throttled)
struct ContainerContentsTests {
    /// Names spelled out in their file names, one past that length (hashed on disk), and ones that are not ASCII.
    static let long = String(repeating: "a long name, ", count: 10)
    static let names = ["status", "wormhole.message.button", "é", "e\u{301}", long, "\u{301}" + long]

    /// What `wormhole COMMAND --list` printed: the names and the count of what it skipped.
    private func list(_ command: String, _ container: TemporaryContainer) async throws -> (names: [String], skipped: Int) {
        let peer = try Peer("wormhole", [command, "--container", container.path, "--list"])
        #expect(try await peer.awaitExit() == 0, "\(peer.errorOutput)")
        #expect(peer.output.count == 1, "\(peer.output)")
        let json = try #require(peer.jsonLines().first)
        #expect(json["container"] as? String == container.path)
        return (try #require(json["names"] as? [String]), try #require(json["skipped"] as? Int))
    }

    /// `names` in the order a listing gives them: by their UTF-8 bytes.
    private func sorted(_ names: [String]) -> [String] {
        names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    @Test("another process's retained notifications are listed by the tool and the API, long names by their real name")
    func retainedAcrossProcesses() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(try await list("retained", container) == ([], 0))
        #expect(try center.retainedNotificationNames().isEmpty)
        for name in Self.names {
            let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", name, "--retain"])
            #expect(try await poster.awaitExit() == 0, "\(poster.errorOutput)")
        }
        // Posted without --retain: not held.
        let plain = try Peer("wormhole", ["post", "--container", container.path, "--name", "passing"])
        #expect(try await plain.awaitExit() == 0)
        #expect(FileManager.default.fileExists(atPath: container.path + "/retained/" + RetainedStore.fileName(for: Self.long)))
        #expect(RetainedStore.fileName(for: Self.long).hasPrefix("h-"))
        #expect(try await list("retained", container) == (sorted(Self.names), 0))
        #expect(try center.retainedNotificationNames().map(\.rawValue) == sorted(Self.names))
        // Each listed name reads.
        for name in try center.retainedNotificationNames() { #expect(center.retainedNotification(named: name) != nil, "\(name)") }
        center.clearRetainedNotification(named: .init("status"))
        #expect(try await list("retained", container).names == sorted(Self.names.filter { $0 != "status" }))
        #expect(center.statistics.dropped == 0)
    }

    @Test("another process's group values are listed by the tool and the API; an unset or reset one is not")
    func valuesAcrossProcesses() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(try await list("value", container) == ([], 0))
        #expect(try center.groupValueNames().isEmpty)
        for (index, name) in Self.names.enumerated() {
            let setter = try Peer("wormhole", ["value", "--container", container.path, "--name", name, "--set", "\(index)"])
            #expect(try await setter.awaitExit() == 0, "\(setter.errorOutput)")
        }
        let reset = try Peer("wormhole", ["value", "--container", container.path, "--name", "status", "--reset"])
        #expect(try await reset.awaitExit() == 0)
        // Read but never set: makes nothing.
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "never"])
        #expect(try await reader.awaitExit() == 0)
        let set = sorted(Self.names.filter { $0 != "status" })
        #expect(try await list("value", container) == (set, 0))
        #expect(try center.groupValueNames() == set)
        for (index, name) in Self.names.enumerated() where name != "status" {
            #expect(GroupValue(name, default: -1, in: center).value == index, "\(name)")
        }
        try GroupValue("status", default: 0, in: center).set(1)
        #expect(try await list("value", container).names == sorted(Self.names))
        // Values are not retained notifications, nor the other way round.
        #expect(try center.retainedNotificationNames().isEmpty)
        #expect(center.statistics.dropped == 0)
    }

    @Test("FIFOs, links, huge, damaged, misnamed and garbage files among retained ones are skipped and counted, never read")
    func retainedAmongPlanted() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for name in ["kept", Self.long] {
            try center.postReporting(name: .init(name), object: nil, userInfo: ["n": 1], retain: true)
        }
        let folder = container.path + "/retained/"
        let file = { (name: String) in folder + RetainedStore.fileName(for: name) }
        try #require(mkfifo(file("fifo"), 0o600) == 0)
        try #require(mkfifo(folder + "h-00112233445566ff", 0o600) == 0)
        try #require(symlink(file("kept"), file("link")) == 0)
        try #require(mkdir(file("folder"), 0o700) == 0)
        // A file over the largest frame's size: refused by its size, not read.
        #expect(FileManager.default.createFile(atPath: file("huge"), contents: nil))
        try #require(truncate(file("huge"), 1 << 40) == 0)
        try Data("not a frame".utf8).write(to: URL(fileURLWithPath: file("garbage")))
        // A whole retained notification under another name's file, spelled and hashed.
        try FileManager.default.copyItem(atPath: file("kept"), toPath: file("other"))
        try FileManager.default.copyItem(atPath: file("kept"), toPath: folder + "h-0123456789abcdef")
        // Names Wormhole never writes: uppercase or odd hex, bytes that are not UTF-8, no prefix.
        for name in ["n-4B", "n-6", "n-ff", "h-12", "notes.txt"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: folder + name))
        }
        // A writer's temporary file: neither listed nor skipped.
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder + StoredFile.temporaryPrefix + "0123456789abcdef"))
        let planted = 13

        let expected = sorted(["kept", Self.long])
        let names = try finishes(within: 20, "listing") { try center.retainedNotificationNames() }
        #expect(names.map(\.rawValue) == expected)
        #expect(center.statistics.dropped == planted)
        #expect(try await list("retained", container) == (expected, planted))
        // Left where they are, and reads of the real ones unchanged.
        #expect(FileManager.default.fileExists(atPath: file("garbage")) && FileManager.default.fileExists(atPath: folder + "notes.txt"))
        #expect(center.retainedNotification(named: .init(Self.long))?.userInfo?["n"] as? Int == 1)
    }

    @Test("folders and files planted in values/ are skipped and counted; a value with a damaged newest version still lists")
    func valuesAmongPlanted() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for name in ["kept", Self.long, "damaged-newest"] { try GroupValue(name, default: 0, in: center).set(7) }
        try GroupValue("damaged-newest", default: 0, in: center).set(8)
        let values = container.path + "/values/"
        let folder = { (name: String) in values + RetainedStore.fileName(for: name) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder("damaged-newest") + "/" + ValueStore.fileName(2)))
        // A file, a FIFO and a link where a value's folder would be.
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder("file")))
        try #require(mkfifo(folder("fifo"), 0o600) == 0)
        try #require(symlink(folder("kept"), folder("link")) == 0)
        // A folder whose only version is damaged; a hashed folder whose versions name a value that does not hash
        // to it; one of another value's versions under a third name.
        try #require(mkdir(folder("broken"), 0o700) == 0)
        try Data("not a frame".utf8).write(to: URL(fileURLWithPath: folder("broken") + "/" + ValueStore.fileName(1)))
        try FileManager.default.copyItem(atPath: folder("kept"), toPath: values + "h-0123456789abcdef")
        try FileManager.default.copyItem(atPath: folder("kept"), toPath: folder("other"))
        // Names Wormhole never makes.
        for name in ["n-4B", "h-12", "notes"] { try #require(mkdir(values + name, 0o700) == 0) }
        // An empty folder holds no value: neither listed nor skipped.
        try #require(mkdir(folder("empty"), 0o700) == 0)
        let planted = 9

        let expected = sorted(["damaged-newest", "kept", Self.long])
        #expect(try finishes(within: 20, "listing") { try center.groupValueNames() } == expected)
        #expect(center.statistics.dropped == planted)
        #expect(try await list("value", container) == (expected, planted))
        #expect(GroupValue("damaged-newest", default: 0, in: center).value == 7)
    }
}
