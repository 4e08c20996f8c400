import Foundation
import Testing
import Wormhole
import WormholeRelay
import WormholeTestSupport

/// The relay's own files in the container (`relay/<client identifier>/state`, `posted`, `outbox/`), with relays
/// of this process on real containers and the stand-in link: they are reached beneath the container, never
/// through a link; what the relay did not make is never removed; and one relay runs per container and client
/// identifier in a process.
@Suite("Relay folder", .serialized, .throttled)
struct RelayFolderTests {
    /// A relay of this process on `container`, over `link`'s side `side`, routing `n`.
    private static func relay(
        _ container: URL, _ link: TemporaryContainer, side: FileLink.Side = .phone,
        clientIdentifier: String = WormholeRelay.defaultClientIdentifier
    ) throws -> (relay: WormholeRelay, link: FileLink) {
        let fileLink = FileLink(directory: link.url, side: side)
        let relay = try WormholeRelay(
            containerURL: container, routes: [.notifications(named: "n")], link: fileLink, clientIdentifier: clientIdentifier)
        return (relay, fileLink)
    }

    /// Posts `count` notifications `n` into the group of `container` from a center of this process.
    private static func post(_ container: URL, count: Int) throws {
        let center = try GroupNotificationCenter(containerURL: container)
        for i in 0..<count {
            _ = try center.postReporting(name: Notification.Name("n"), object: nil, userInfo: ["i": i])
        }
    }

    /// A folder of the user's, outside any container: a note, a hidden file, a file named as an outbox item
    /// would be, and a folder of photos.
    private static func fillUserFolder(_ url: URL) throws {
        try Data("my notes\n".utf8).write(to: url.appendingPathComponent("notes.txt"))
        try Data("hidden".utf8).write(to: url.appendingPathComponent(".profile"))
        try Data("not an item".utf8).write(to: url.appendingPathComponent("0000000000000001"))
        let photos = url.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: false)
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: photos.appendingPathComponent("one.jpg"))
    }

    /// What `url` holds, recursively, without following links: each entry's kind, mode and content.
    private static func snapshot(_ url: URL) throws -> [String: String] {
        var entries: [String: String] = [:]
        func walk(_ folder: String, _ prefix: String) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
                let path = folder + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { throw CocoaError(.fileReadUnknown) }
                let mode = String(info.st_mode & 0o7777, radix: 8)
                switch info.st_mode & S_IFMT {
                case S_IFDIR:
                    entries[prefix + name] = "folder \(mode)"
                    try walk(path, prefix + name + "/")
                case S_IFLNK:
                    entries[prefix + name] = "link to " + (try FileManager.default.destinationOfSymbolicLink(atPath: path))
                case S_IFREG:
                    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                    entries[prefix + name] = "file \(mode) \(bytes.base64EncodedString())"
                case S_IFIFO:
                    entries[prefix + name] = "fifo \(mode)"
                default:
                    entries[prefix + name] = "other \(info.st_mode)"
                }
            }
        }
        try walk(url.path, "")
        return entries
    }

    /// The permission bits of `path`, and whether it is a folder, as `lstat(2)` says.
    private static func mode(_ path: String) -> (mode: mode_t, isFolder: Bool, isFile: Bool)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & 0o7777, info.st_mode & S_IFMT == S_IFDIR, info.st_mode & S_IFMT == S_IFREG)
    }

    @Test(
        "A folder of the relay's that is a link to a folder outside: the relay does not start, and nothing outside is touched",
        arguments: ["relay", "relay/wormhole.relay", "relay/wormhole.relay/outbox"])
    func linkedFolder(_ linked: String) throws {
        let container = TemporaryContainer("relay-linked")
        let outside = TemporaryContainer("relay-outside")
        let link = TemporaryContainer("relay-link")
        try Self.fillUserFolder(outside.url)
        let before = try Self.snapshot(outside.url)
        // The container made, and the folders above the link, as a relay would have made them.
        _ = try GroupNotificationCenter(containerURL: container.url)
        let parent = container.url.appendingPathComponent(linked).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(
            atPath: container.url.appendingPathComponent(linked).path, withDestinationPath: outside.path)
        let error = #expect(throws: WormholeError.self) { _ = try Self.relay(container.url, link) }
        #expect(error?.code == .invalidContainer)
        #expect(try Self.snapshot(outside.url) == before)
        // The link itself stays, and nothing was made beside it either (no state before the outbox is open).
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: container.url.appendingPathComponent(linked).path) == outside.path)
        if linked != "relay" {
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == [URL(fileURLWithPath: linked).lastPathComponent])
        }
    }

    @Test(
        "A folder of the relay's that others may write: the relay does not start",
        arguments: ["relay", "relay/wormhole.relay", "relay/wormhole.relay/outbox"])
    func foreignFolder(_ folder: String) throws {
        let container = TemporaryContainer("relay-foreign")
        let link = TemporaryContainer("relay-link")
        _ = try GroupNotificationCenter(containerURL: container.url)
        let url = container.url.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chmod(url.path, 0o777) == 0)
        let error = #expect(throws: WormholeError.self) { _ = try Self.relay(container.url, link) }
        #expect(error?.code == .insecureContainer)
        // Nothing was made in it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty)
    }

    @Test("The relay's files are 0600 and its folders 0700, on the side that sends and the side that posts")
    func modes() async throws {
        let phone = TemporaryContainer("relay-phone")
        let watch = TemporaryContainer("relay-watch")
        let link = TemporaryContainer("relay-link")
        let phoneRelay = try Self.relay(phone.url, link, side: .phone)
        phoneRelay.relay.start()
        try Self.post(phone.url, count: 1)
        try await pollUntil("the phone's relay took it") { phoneRelay.relay.status.waiting == 1 }
        let folder = phone.path + "/relay/wormhole.relay"
        let items = try FileManager.default.contentsOfDirectory(atPath: folder + "/outbox")
        #expect(items == ["0000000000000001"])
        // Before the other side acknowledges it: the item is still there.
        let phoneModes = [folder + "/state", folder + "/outbox/0000000000000001"].map { Self.mode($0)?.mode }
        #expect(phoneModes == [0o600, 0o600])
        let watchRelay = try Self.relay(watch.url, link, side: .watch)
        watchRelay.relay.start()
        try await pollUntil("the watch's relay posted it") { watchRelay.relay.status.posted == 1 }
        for container in [phone.path, watch.path] {
            for path in ["/relay", "/relay/wormhole.relay", "/relay/wormhole.relay/outbox"] {
                let found = Self.mode(container + path)
                #expect(found?.isFolder == true && found?.mode == 0o700, "\(container + path): \(String(describing: found))")
            }
            #expect(Self.mode(container + "/relay/wormhole.relay/state")?.mode == 0o600)
        }
        let posted = Self.mode(watch.path + "/relay/wormhole.relay/posted")
        #expect(posted?.isFile == true && posted?.mode == 0o600)
        phoneRelay.relay.close()
        watchRelay.relay.close()
    }

    @Test("What is planted in the outbox and is not a file (a FIFO, folders, a link) stays; the items still cross")
    func plantedInOutbox() async throws {
        let phone = TemporaryContainer("relay-phone")
        let watch = TemporaryContainer("relay-watch")
        let link = TemporaryContainer("relay-link")
        let outside = TemporaryContainer("relay-outside")
        try Self.fillUserFolder(outside.url)
        let outsideBefore = try Self.snapshot(outside.url)
        // Two items wait in the phone's outbox: the other side never ran.
        let first = try Self.relay(phone.url, link)
        first.relay.start()
        try Self.post(phone.url, count: 2)
        try await pollUntil("two wait") { first.relay.status.waiting == 2 }
        first.relay.close()
        first.link.close()
        let outbox = phone.url.appendingPathComponent("relay/wormhole.relay/outbox")
        #expect(mkfifo(outbox.appendingPathComponent("fifo").path, 0o600) == 0)
        let folder = outbox.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: folder.appendingPathComponent("keep.txt"))
        try FileManager.default.createSymbolicLink(atPath: outbox.appendingPathComponent("link").path, withDestinationPath: outside.path)
        // A folder under the name the next item takes.
        let named = outbox.appendingPathComponent("0000000000000003")
        try FileManager.default.createDirectory(at: named, withIntermediateDirectories: false)
        try Data("keep me too".utf8).write(to: named.appendingPathComponent("keep.txt"))
        let before = try Self.snapshot(outbox)
        #expect(before["0000000000000001"] != nil && before["0000000000000002"] != nil)

        let phoneRelay = try Self.relay(phone.url, link, side: .phone)
        let watchRelay = try Self.relay(watch.url, link, side: .watch)
        phoneRelay.relay.start()
        watchRelay.relay.start()
        try await pollUntil("the two that waited crossed", timeout: 30) { watchRelay.relay.status.posted == 2 }
        try Self.post(phone.url, count: 1)
        try await pollUntil("a new one crossed", timeout: 30) { watchRelay.relay.status.posted == 3 }
        phoneRelay.relay.close()
        watchRelay.relay.close()

        let after = try Self.snapshot(outbox)
        for name in ["fifo", "folder", "folder/keep.txt", "link"] { #expect(after[name] != nil && after[name] == before[name], "\(name)") }
        // The folder under an item's name was moved aside whole, not removed.
        let moved = after.keys.filter { $0.hasPrefix("0000000000000003.moved-") && !$0.contains("/") }
        #expect(moved.count == 1)
        if let moved = moved.first {
            #expect(after[moved] == before["0000000000000003"])
            #expect(after[moved + "/keep.txt"] != nil && after[moved + "/keep.txt"] == before["0000000000000003/keep.txt"])
        }
        #expect(try Self.snapshot(outside.url) == outsideBefore)
        #expect(phoneRelay.relay.status.dropped == 1, "the item whose name was taken counts as damaged")
    }

    @Test("A second relay of this process on a container and client identifier is refused until the first closes")
    func oneRelayPerProcess() async throws {
        let container = TemporaryContainer("relay-twice")
        let link = TemporaryContainer("relay-link")
        let first = try Self.relay(container.url, link)
        first.relay.start()
        let error = #expect(throws: WormholeError.self) { _ = try Self.relay(container.url, link) }
        #expect(error?.code == .identityInUse)
        // Through another path to the same container too.
        let alias = TemporaryContainer("relay-alias")
        let aliasPath = alias.path + "/container"
        try FileManager.default.createSymbolicLink(atPath: aliasPath, withDestinationPath: container.path)
        let viaAlias = #expect(throws: WormholeError.self) { _ = try Self.relay(URL(fileURLWithPath: aliasPath), link) }
        #expect(viaAlias?.code == .identityInUse)
        // Another client identifier is another relay, with a folder of its own.
        let other = try Self.relay(container.url, link, clientIdentifier: "other.relay")
        #expect(FileManager.default.fileExists(atPath: container.path + "/relay/other.relay/state"))
        other.relay.close()
        // The first one, undisturbed, takes what is posted.
        try Self.post(container.url, count: 1)
        try await pollUntil("the first relay took it") { first.relay.status.waiting == 1 }

        first.relay.close()
        first.link.close()
        // Closed, while the first still exists: a new one starts, and goes on from where it stopped.
        let second = try Self.relay(container.url, link)
        second.relay.start()
        #expect(second.relay.status.waiting == 1)
        try Self.post(container.url, count: 1)
        try await pollUntil("the new relay took the next one") { second.relay.status.waiting == 2 }
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/relay/wormhole.relay/outbox").sorted()
            == ["0000000000000001", "0000000000000002"])
        second.relay.close()
        _ = first
    }
}
