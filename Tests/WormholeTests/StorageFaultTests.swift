import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// Damaged, hostile and missing files in a container: each is an error or a counted drop, never a hang, a crash,
/// a forged delivery or a write outside the container.
@Suite("Storage faults: damaged, hostile and missing files", .throttled)
struct StorageFaultTests {
    // MARK: Spool segments

    @Test("a torn record whose payload embeds a valid record of the same key delivers nothing but what was posted")
    func forgedRecord() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        // Every name: a forged notification of any name would be seen.
        center.addObserver(forName: nil, object: nil, queue: nil, using: recorder.block)
        let key = UInt64.random(in: 0...UInt64.max)
        let first = Frame(poster: 7, sequence: 1, name: "fg", object: "first", userInfo: nil).encoded()
        let forged = Frame(poster: 7, sequence: 2, name: "fg", object: "forged", userInfo: nil).encoded()
        let embedded = SpoolRecord.encode(forged, key: key)
        // The second record claims more bytes than the file holds, and what it does hold is a whole, valid record.
        let claimed = 4 + embedded.count + 64
        var segment = SpoolRecord.header(key: key) + SpoolRecord.encode(first, key: key)
        segment += bigEndian(UInt32(claimed)) + bigEndian(UInt32(0x1234_5678))
        segment += [0, 0, 0, 0] + embedded
        try plantSegment(segment, named: "0000000000000001-0000000000000007.seg", for: center, in: container)
        center.endpoint.listenerSpool?.bell.touch()

        #expect(try await recorder.wait(for: 1).map(\.object) == ["first"])
        // A forged record would have been handed over with the first one; a later post marks the end.
        try await postFromPeer(container, "marker", object: "marker")
        let received = try await recorder.wait(for: 2)
        #expect(received.map(\.object) == ["first", "marker"])
        #expect(!received.contains { $0.object == "forged" })
    }

    @Test("an unnamed segment is never read: a listener leaves a fresh one alone and removes one over a minute old")
    func unnamedSegments() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: nil, object: nil, queue: nil, using: recorder.block)
        let key = UInt64.random(in: 0...UInt64.max)
        func segment(_ object: String) -> [UInt8] {
            let frame = Frame(poster: 7, sequence: 1, name: "un", object: object, userInfo: nil).encoded()
            return SpoolRecord.header(key: key) + SpoolRecord.encode(frame, key: key)
        }
        let id = try #require(center.endpoint.listenerSpool?.listener)
        let folder = container.path + "/spool/" + FileName.hex(id) + "/"
        let old = "0000000000000001-0000000000000007" + SpoolFolder.unnamedSuffix
        let fresh = "0000000000000002-0000000000000007" + SpoolFolder.unnamedSuffix
        try plantSegment(segment("old"), named: old, for: center, in: container)
        try plantSegment(segment("fresh"), named: fresh, for: center, in: container)
        let longAgo = Date().addingTimeInterval(-Double(Limits.unnamedSegmentLifetime.duration.components.seconds) - 60)
        try FileManager.default.setAttributes([.modificationDate: longAgo], ofItemAtPath: folder + old)
        center.endpoint.listenerSpool?.bell.touch()

        try await pollUntil("the old unnamed segment to be removed") { !FileManager.default.fileExists(atPath: folder + old) }
        try await postFromPeer(container, "marker", object: "marker")
        #expect(try await recorder.wait(for: 1).map(\.object) == ["marker"])
        #expect(FileManager.default.fileExists(atPath: folder + fresh), "a fresh one may still be named by its poster")
    }

    @Test("a segment of record headers every 12 bytes for 1 MiB is counted as damaged once, and nothing stalls")
    func headerEveryTwelveBytes() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("later"), object: nil, queue: nil, using: recorder.block)
        let key = UInt64.random(in: 0...UInt64.max)
        // length 4, a check that fails, 4 bytes: each record's end is where the next header starts.
        var segment = SpoolRecord.header(key: key)
        let record = bigEndian(UInt32(4)) + bigEndian(UInt32(0)) + [0xAB, 0xAB, 0xAB, 0xAB]
        segment.reserveCapacity(segment.count + (1 << 20) + record.count)
        while segment.count < 1 << 20 { segment += record }
        let name = "0000000000000001-0000000000000009.seg"
        try plantSegment(segment, named: name, for: center, in: container)
        center.endpoint.listenerSpool?.bell.touch()

        try await pollUntil("the damaged segment to be counted and removed") {
            center.statistics.dropped >= 1 && !spoolHoldsSegments(of: center, in: container)
        }
        try await postFromPeer(container, "later", start: 5)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [5])
        // Counted once, as one damaged segment: not once per bad header.
        #expect(center.statistics.dropped == 1)
    }

    @Test("a sparse 1 TB segment is refused unread, counted as damaged and removed; later posts arrive")
    func sparseTerabyteSegment() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("after.sparse"), object: nil, queue: nil, using: recorder.block)
        let staging = container.path + "/.staging-sparse"
        let fd = open(staging, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        let truncated = ftruncate(fd, 1 << 40)
        close(fd)
        try #require(truncated == 0, "the file system cannot hold a sparse 1 TB file: errno \(errno)")
        let id = try #require(center.endpoint.listenerSpool?.listener)
        let target = container.path + "/spool/" + FileName.hex(id) + "/0000000000000001-0000000000000003.seg"
        try #require(rename(staging, target) == 0)
        center.endpoint.listenerSpool?.bell.touch()

        try await pollUntil("the sparse segment to be counted and removed") {
            center.statistics.dropped >= 1 && !spoolHoldsSegments(of: center, in: container)
        }
        #expect(center.statistics.dropped == 1)
        try await postFromPeer(container, "after.sparse", start: 3, count: 2)
        #expect(try await recorder.wait(for: 2).compactMap(\.number) == [3, 4])
    }

    // MARK: Numbers planted in names and times

    @Test("the largest number every numbered file kind allows, and times past what nanoseconds hold: every reader and writer lives on")
    func plantedMaximalNumbers() async throws {
        let container = TemporaryContainer()
        let root = container.path
        // A durable identity, so that its spool (and what it holds back) outlives its process.
        let first = try Peer("wormhole", ["listen", "--container", root, "--client", "w", "--name", "d"])
        try await first.awaitError(containing: "listening")
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        let value = GroupValue("count", default: 0, in: try GroupNotificationCenter(containerURL: container.url))
        try value.set(41)

        let maximal = FileName.hex(.max)
        let durableSpool = root + "/spool/" + FileName.hex(RegistryEntry.durableListener("w")) + "/"
        let key = UInt64.random(in: 0...UInt64.max)
        // A held file whose frame nobody observes: the durable listener must hold it again, in a file of its own.
        let held = Frame(poster: .max, sequence: .max, name: "nobody", object: nil, userInfo: nil).encoded()
        try Data(SpoolRecord.header(key: key) + SpoolRecord.encode(held, key: key)).write(to: URL(fileURLWithPath: durableSpool + "held-" + maximal))
        let segment = Frame(poster: .max, sequence: .max, name: "nobody", object: nil, userInfo: nil).encoded()
        try Data(SpoolRecord.header(key: key) + SpoolRecord.encode(segment, key: key))
            .write(to: URL(fileURLWithPath: durableSpool + maximal + "-" + maximal + SpoolFolder.segmentSuffix))
        try Data().write(to: URL(fileURLWithPath: durableSpool + maximal + "-" + maximal + SpoolFolder.unnamedSuffix))
        let versions = root + "/values/" + RetainedStore.fileName(for: "count") + "/"
        let version = Frame(poster: 1, sequence: .max, name: GroupValueName.notification(for: "count"), object: nil, userInfo: nil)
        try Data(SpoolRecord.segment([version.encoded()])).write(to: URL(fileURLWithPath: versions + ValueStore.versionPrefix + maximal))
        // Just below the end of the range, detached from the value's history: ignored, and never claimed past.
        try Data(SpoolRecord.segment([version.encoded()])).write(to: URL(fileURLWithPath: versions + ValueStore.fileName(ValueStore.maximumVersion - 1)))
        try FileManager.default.createDirectory(atPath: root + "/spool/" + maximal, withIntermediateDirectories: false)
        try Data("junk".utf8).write(to: URL(fileURLWithPath: root + "/registry/" + maximal))
        try Data().write(to: URL(fileURLWithPath: root + "/registry/" + StoredFile.temporaryPrefix + "planted"))
        try Data().write(to: URL(fileURLWithPath: versions + StoredFile.temporaryPrefix + "planted"))
        // Times past the ends of 64-bit nanoseconds (the file system keeps what it can of them).
        for path in [root + "/registry", root + "/registry/" + maximal, root + "/registry/" + StoredFile.temporaryPrefix + "planted",
            root + "/spool/" + maximal, durableSpool + maximal + "-" + maximal + SpoolFolder.unnamedSuffix,
            versions + StoredFile.temporaryPrefix + "planted"]
        {
            try setModificationTime(path, seconds: 15_000_000_000)
        }

        // The durable identity starts, takes its spool (holding back what nobody observes) and receives.
        let durable = try Peer("wormhole", ["listen", "--container", root, "--client", "w", "--name", "d"])
        try await durable.awaitError(containing: "listening")
        try await postFromPeer(container, "d", start: 7)
        _ = try await durable.awaitLines(1)
        #expect(durable.jsonLines().compactMap { ($0["userInfo"] as? [String: Any])?["i"] as? Int } == [7],
            "durable listener: \(durable.errorOutput)")
        // Writers of the group value claim past the planted version, in another process and this one.
        let adder = try Peer("wormhole-test-peer", ["value-add", "--container", root, "--name", "count", "--count", "2"])
        #expect(try await adder.awaitExit() == 0, "value-add: \(adder.errorOutput)")
        #expect(value.value == 43)
        try value.reset()
        #expect(value.value == 0)
        let status = try Peer("wormhole", ["status", "--container", root])
        #expect(try await status.awaitExit() == 0, "status: \(status.errorOutput)")
        // A new process registers (removing orphans by their times) and posts.
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", root, "--name", "e", "--count", "1"])
        try await listener.awaitLines(1)
        try await postFromPeer(container, "e", start: 3)
        #expect(try await listener.awaitExit() == 0)
        durable.signal(SIGTERM)
        // The durable listener removed the planted held file unread; what it held back it keeps in one of its own.
        let names = try FileManager.default.contentsOfDirectory(atPath: durableSpool)
        #expect(!names.contains("held-" + maximal))
        #expect(!FileManager.default.fileExists(atPath: versions + ValueStore.versionPrefix + maximal))
    }

    @Test("a group value whose newest version is emptied, cut short, a FIFO, a folder, sparse or foreign: set, update and reset write past it, across processes",
        arguments: ["empty", "truncated", "fifo", "folder", "sparse-terabyte", "sparse", "foreign"])
    func damagedNewestVersion(damage: String) async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let value = GroupValue("count", default: 0, in: center)
        try value.set(5)
        try value.set(6)
        let versions = container.path + "/values/" + RetainedStore.fileName(for: "count") + "/"
        let newest = versions + ValueStore.fileName(2)
        try #require(FileManager.default.fileExists(atPath: newest))
        switch damage {
        case "empty": try #require(truncate(newest, 0) == 0)
        case "truncated": try #require(truncate(newest, 30) == 0)
        case "fifo": try #require(unlink(newest) == 0 && mkfifo(newest, 0o600) == 0)
        case "folder": try #require(unlink(newest) == 0 && mkdir(newest, 0o700) == 0)
        case "sparse-terabyte": try #require(truncate(newest, 1 << 40) == 0)
        case "sparse": try #require(truncate(newest, 8 << 20) == 0)
        default:
            let other = Frame(poster: 1, sequence: 2, name: GroupValueName.notification(for: "other"), object: nil, userInfo: nil)
            try Data(SpoolRecord.segment([other.encoded()])).write(to: URL(fileURLWithPath: newest))
        }
        // Readers skip it: the newest whole version.
        #expect(try finishes(within: 20, "reading") { value.value } == 5)
        // Another process updates past it.
        let adder = try Peer("wormhole-test-peer", ["value-add", "--container", container.path, "--name", "count", "--count", "1"])
        #expect(try await adder.awaitExit() == 0, "value-add: \(adder.errorOutput)")
        #expect(value.value == 6)
        #expect(FileManager.default.fileExists(atPath: versions + ValueStore.fileName(3)))
        try finishes(within: 20, "set") { try value.set(10) }
        #expect(value.value == 10)
        try finishes(within: 20, "reset") { try value.reset() }
        #expect(value.value == 0)
        #expect(center.statistics.dropped >= 1, "the damaged version is counted")
    }

    // MARK: The registry

    @Test("registry.changes truncated to nothing, then replaced by a FIFO: posts complete and arrive")
    func changeMarkTruncatedAndFIFO() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("c"), object: nil, queue: nil, using: recorder.block)
        let changes = container.path + "/" + Registry.changesName
        try #require(FileManager.default.fileExists(atPath: changes))

        try #require(truncate(changes, 0) == 0)
        try await postFromPeer(container, "c", start: 0)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [0])

        try #require(unlink(changes) == 0)
        try #require(mkfifo(changes, 0o600) == 0)
        try await postFromPeer(container, "c", start: 1)
        #expect(try await recorder.wait(for: 2).compactMap(\.number) == [0, 1])

        // A process that registers now writes the mark, and this one posts to it, reading it.
        try #require(unlink(changes) == 0 || errno == ENOENT)
        try #require(mkfifo(changes, 0o600) == 0)
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "c2", "--count", "1"])
        try await listener.awaitLines(1)
        let report = try finishes(within: 10, "a post with a FIFO for registry.changes") {
            try center.postReporting(name: .init("c2"), object: nil, userInfo: ["i": 2])
        }
        #expect(report.delivered == 1)
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().last?["i"] as? Int == 2)
    }

    @Test("a registration after registry.changes was replaced under a process that wrote it is seen at once")
    func changeMarkReplacedUnderItsWriter() throws {
        let container = TemporaryContainer()
        let listening = try GroupNotificationCenter(containerURL: container.url)
        // The first registration creates registry.changes; the next opens it for writing and keeps the descriptor.
        listening.addObserver(forName: .init("warm"), object: nil, queue: nil) { _ in }
        listening.addObserver(forName: .init("warm.again"), object: nil, queue: nil) { _ in }
        // Another process replaces the file (as one does that found it damaged): same name, a new file.
        let changes = container.path + "/" + Registry.changesName
        try Data([1, 2, 3, 4, 5, 6, 7, 8]).write(to: URL(fileURLWithPath: container.path + "/.staging-changes"))
        try #require(rename(container.path + "/.staging-changes", changes) == 0)
        // A poster with a registry cache of its own (another endpoint: other limits), fresh from reading the mark.
        let poster = try GroupNotificationCenter(
            containerURL: container.url, clientIdentifier: nil, configuration: .init(maximumSpoolSize: 64 << 20))
        #expect(try poster.postReporting(name: .init("late"), object: nil).delivered == 0)
        let recorder = Recorder()
        listening.addObserver(forName: .init("late"), object: nil, queue: nil, using: recorder.block)
        // When addObserver returns, a post from any process reaches the observer.
        let report = try poster.postReporting(name: .init("late"), object: nil)
        #expect(report.delivered == 1)
    }

    @Test("a FIFO, a folder and a symbolic link named as registry entries are skipped and counted, never listed")
    func hostileRegistryEntries() async throws {
        let container = TemporaryContainer()
        let outside = TemporaryContainer("outside")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("e"), object: nil, queue: nil, using: recorder.block)
        let own = try #require(center.endpoint.listenerSpool?.listener)
        let registry = container.path + "/registry/"
        let fifo = FileName.hex(0xF1F0_0000_0000_0001)
        let folder = FileName.hex(0xD1D0_0000_0000_0002)
        let linked: UInt64 = 0x5717_0000_0000_0003
        try #require(mkfifo(registry + fifo, 0o600) == 0)
        try #require(mkdir(registry + folder, 0o700) == 0)
        // The link leads to a valid entry of a listener that observes everything and whose socket listens: if it
        // were followed, posts would reach it and the status would list it.
        let target = outside.path + "/entry"
        try Data(RegistryFormat.encode(RegistryEntry(
            listener: linked, pid: getpid(), subscriptions: [Subscription(name: nil, object: nil)]))).write(to: URL(fileURLWithPath: target))
        try #require(symlink(target, registry + FileName.hex(linked)) == 0)
        let socket = try UnixSocket.bind(
            .sequencedPacket, directory: center.endpoint.container.listenersDescriptor,
            directoryPath: center.endpoint.container.listenersPath, name: RegistryEntry.socketName(linked))

        // A post from another process completes, and its notification arrives.
        try await postFromPeer(container, "e", start: 1)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [1])
        // A listener in another process registers; this process posts to it.
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "e2", "--count", "1"])
        try await listener.awaitLines(1)
        let peerIdentifier = listedIdentifier(listener, container)
        let report = try finishes(within: 10, "a post past hostile registry entries") {
            try center.postReporting(name: .init("e2"), object: nil, userInfo: ["i": 2])
        }
        #expect(report.delivered == 1)
        #expect(report.failures.isEmpty)
        #expect(try await listener.awaitExit() == 0)
        #expect(center.statistics.dropped >= 3)
        let listed = Set(try finishes(within: 10, "listenerStatus") { center.listenerStatus().map(\.identifier) })
        #expect(listed.isSubset(of: [FileName.hex(own), peerIdentifier]), "\(listed)")
        #expect(!listed.contains(fifo) && !listed.contains(folder) && !listed.contains(FileName.hex(linked)))
        #expect(listed.contains(FileName.hex(own)))
        socket.close()
    }

    @Test("files hard-linked from outside as registry.changes and as a bell are never written through")
    func hardLinksFromOutside() async throws {
        let container = TemporaryContainer()
        let outside = TemporaryContainer("outside")
        let changesOutside = outside.path + "/changes"
        let bellOutside = outside.path + "/bell"
        let changesContent = Data("outside changes: keep me".utf8)
        let bellContent = Data("outside bell: keep me too".utf8)
        try changesContent.write(to: URL(fileURLWithPath: changesOutside))
        try bellContent.write(to: URL(fileURLWithPath: bellOutside))
        let center = try GroupNotificationCenter(containerURL: container.url)
        let changes = container.path + "/" + Registry.changesName
        func plantChanges() throws {
            _ = unlink(changes)
            try #require(link(changesOutside, changes) == 0, "hard link: errno \(errno)")
        }
        // This process's first registration meets the link.
        try plantChanges()
        let recorder = Recorder()
        center.addObserver(forName: .init("h"), object: nil, queue: nil, using: recorder.block)
        let id = try #require(center.endpoint.listenerSpool?.listener)
        let bell = container.path + "/spool/" + FileName.hex(id) + "/" + SpoolFolder.bellName
        try #require(unlink(bell) == 0)
        try #require(link(bellOutside, bell) == 0)

        // Another process registers, meeting the link.
        try plantChanges()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "h2", "--count", "1"])
        try await listener.awaitLines(1)
        // Another process spools (a frame over the socket's limit) and rings the bell.
        try await postFromPeer(container, "h", start: 1, extra: ["--payload", "140000"])
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [1])
        // This process registers again, and posts.
        try plantChanges()
        center.addObserver(forName: .init("h3"), object: nil, queue: nil) { _ in }
        try center.postReporting(name: .init("h2"), object: nil, userInfo: ["i": 2])
        #expect(try await listener.awaitExit() == 0)
        center.endpoint.listenerSpool?.bell.touch()

        #expect(try Data(contentsOf: URL(fileURLWithPath: changesOutside)) == changesContent)
        #expect(try Data(contentsOf: URL(fileURLWithPath: bellOutside)) == bellContent)
    }

    @Test("a listener whose subscriptions pass the entry limit registers for every name and still receives")
    func subscriptionsPastEntryLimit() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        // 140 observers of a 4,000-byte name and a 4,000-byte object each: 1.1 MiB of subscriptions. (Each
        // addObserver encodes and writes every subscription again, so the work grows with the square of their
        // number: 2,000 observers of 3 KiB names take minutes in a debug build.)
        let names = (0..<140).map { String(format: "%04d.", $0) + String(repeating: "n", count: 3995) }
        let objects = (0..<140).map { String(format: "%04d.", $0) + String(repeating: "o", count: 3995) }
        for (name, object) in zip(names, objects) {
            center.addObserver(forName: .init(name), object: object, queue: nil, using: recorder.block)
        }
        let own = try #require(center.listenerStatus().first { $0.pid == getpid() })
        #expect(own.subscriptions == [Subscription(name: nil, object: nil)])
        let other = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "other", "--count", "1"])
        try await other.awaitLines(1)

        let report = try await postFromPeer(container, names[123], object: objects[123], start: 7)
        #expect(report["delivered"] as? Int == 1)
        let received = try await recorder.wait(for: 1)
        #expect(received.map(\.name) == [names[123]])
        #expect(received.compactMap(\.number) == [7])
        // The other listener's routing is untouched; the big one receives "other" too, but observes none of it.
        try await postFromPeer(container, "other", start: 8)
        #expect(try await other.awaitExit() == 0)
        #expect(other.jsonLines().last?["i"] as? Int == 8)
        // Another process's post of an observed name with another object reaches nobody here.
        try await postFromPeer(container, names[139], object: "not observed", start: 9)
        try await postFromPeer(container, names[139], object: objects[139], start: 10)
        #expect(try await recorder.wait(for: 2).compactMap(\.number) == [7, 10])
        #expect(recorder.all.count == 2)
    }

    // MARK: The listener's socket and the container

    @Test("a listener whose socket file is deleted binds it again, and posts from another process arrive")
    func socketFileDeleted() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("s"), object: nil, queue: nil, using: recorder.block)
        let own = try #require(center.listenerStatus().first { $0.pid == getpid() })
        try #require(unlink(own.socketPath) == 0)
        try await pollUntil("the socket file to be back") {
            var status = stat()
            return lstat(own.socketPath, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
        }
        try await postFromPeer(container, "s", start: 4)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [4])
    }

    @Test("posts into a container moved away fail with incompatibleContainer; a new center on the path works")
    func containerMovedAway() async throws {
        let container = TemporaryContainer()
        let elsewhere = TemporaryContainer("elsewhere")
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.addObserver(forName: .init("m"), object: nil, queue: nil) { _ in }
        try center.postReporting(name: .init("m"), object: nil)
        try #require(rename(container.path, elsewhere.path + "/moved") == 0)

        // Polled on this thread, not with Task.sleep: with the pool busy elsewhere, a task may resume past the deadline.
        func firstRefusal() -> WormholeError? {
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline {
                do {
                    try center.postReporting(name: .init("m"), object: nil)
                    Thread.sleep(forTimeInterval: 0.02)
                } catch let error as WormholeError {
                    return error
                } catch {
                    return nil
                }
            }
            return nil
        }
        #expect(firstRefusal()?.code == .incompatibleContainer)

        let fresh = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        fresh.addObserver(forName: .init("after.move"), object: nil, queue: nil, using: recorder.block)
        try await postFromPeer(container, "after.move", start: 6)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [6])
        #expect(throws: Never.self) { try fresh.postReporting(name: .init("m"), object: nil) }
    }

    @Test("300 connections to one listener, past its maximum, each with one frame: all 300 arrive")
    func moreConnectionsThanTheMaximum() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(
            containerURL: container.url, clientIdentifier: nil, configuration: .init(transport: .sequencedPacket))
        let recorder = Recorder()
        center.addObserver(forName: .init("many"), object: nil, queue: nil, using: recorder.block)
        let own = try #require(center.listenerStatus().first { $0.pid == getpid() })
        let count = Limits.maximumConnections + 44
        var connections: [OwnedDescriptorBox] = []
        var failedSends = 0
        for index in 0..<count {
            let connection = try rawConnect(own.socketPath)
            let frame = Frame(poster: 0x1000 + UInt64(index), sequence: 1, name: "many", object: "\(index)", userInfo: nil).encoded()
            if frame.withUnsafeBytes({ send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) != frame.count {
                failedSends += 1
            }
            connections.append(connection)
        }
        #expect(failedSends == 0)
        let received = try await recorder.wait(for: count)
        #expect(Set(received.compactMap(\.object)) == Set((0..<count).map { "\($0)" }))
        #expect(received.count == count)
        withExtendedLifetime(connections) {}
    }

    // MARK: Limits

    @Test("the container-wide spool cap refuses posts past it, reported and counted, across three stopped listeners")
    func containerSpoolCap() async throws {
        let container = TemporaryContainer()
        let listeners = try (0..<3).map { _ in
            try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "cap"])
        }
        for listener in listeners { try await listener.awaitLines(1) }
        for listener in listeners { try listener.suspend() }
        let limit = 2 << 20
        let center = try GroupNotificationCenter(
            containerURL: container.url, clientIdentifier: nil,
            configuration: .init(maximumSpoolSize: 1 << 20, maximumContainerSpoolSize: limit))
        let blob = Data(count: 64 << 10)
        var failures: [PostReport.Failure] = []
        for _ in 0..<48 {
            failures += try center.postReporting(name: .init("cap"), object: nil, userInfo: ["blob": blob]).failures
        }
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0.error.code == .spoolFull })
        #expect(center.statistics.failed == failures.count)

        let spools = try FileManager.default.contentsOfDirectory(atPath: container.path + "/spool")
        #expect(spools.count == 3)
        let sizes = try spools.map { try folderBytes(container.path + "/spool/" + $0) }
        let onePost = (64 << 10) + 4096
        let total = sizes.reduce(0, +)
        #expect(total <= limit + 3 * onePost, "spools hold \(sizes)")
        #expect(total >= limit - 3 * onePost, "spools hold \(sizes)")
        // The container's cap spoke, not each listener's own.
        #expect(sizes.allSatisfy { $0 < 1 << 20 }, "spools hold \(sizes)")
        for listener in listeners { listener.signal(SIGKILL) }
    }

    @Test("a post to 150 listeners keeps at most twice the link limit of descriptors open into the container")
    func descriptorsBoundedByLinks() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let endpoint = center.endpoint
        var sockets: [CInt] = []
        defer { sockets.forEach { close($0) } }
        let count = 150
        for index in 0..<UInt64(count) {
            let id = 0xF100_0000_0000_0000 | index
            sockets.append(try UnixSocket.bind(
                .sequencedPacket, directory: endpoint.container.listenersDescriptor,
                directoryPath: endpoint.container.listenersPath, name: RegistryEntry.socketName(id)).release().rawValue)
            try #require(mkdir(container.path + "/spool/" + RegistryEntry.spoolName(id), 0o700) == 0)
            try endpoint.registry.write(RegistryEntry(listener: id, pid: getpid(), subscriptions: [Subscription(name: "all", object: nil)]))
        }
        let roots = [container.path, try #require(realPath(container.path))]
        let before = descriptorsInto(roots)
        let report = try center.postReporting(name: .init("all"), object: nil)
        #expect(report.delivered + report.spooled == count)
        #expect(report.failures.isEmpty)
        let after = descriptorsInto(roots)
        #expect(after - before <= 2 * Limits.maximumLinks + 20, "\(before) descriptors into the container before, \(after) after")
    }

    // MARK: Containers the tool or a center must not touch

    @Test("status and retained of a missing or empty container create nothing and are refused as a mistake in the command line")
    func readOnlyCommandsCreateNothing() async throws {
        let scratch = TemporaryContainer("cwd")
        let missing = scratch.path + "/absent"
        let tool = Peer.productsDirectory.appendingPathComponent("wormhole").path
        for arguments in [["status", "--container", missing], ["retained", "--name", "x", "--container", missing]] {
            let command = try runInFolder(scratch.path, tool, arguments)
            #expect(try await command.awaitExit() == 2, "\(arguments)")
            #expect(command.errorOutput.contains { $0.contains("container") }, "\(arguments): \(command.errorOutput)")
            #expect(!FileManager.default.fileExists(atPath: missing), "\(arguments)")
        }
        for arguments in [["status", "--container", ""], ["retained", "--name", "x", "--container", ""]] {
            let command = try runInFolder(scratch.path, tool, arguments)
            #expect(try await command.awaitExit() != 0, "\(arguments)")
            #expect(command.errorOutput.contains { $0.contains("container") }, "\(arguments): \(command.errorOutput)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "\(arguments)")
        }
    }

    @Test("a container of another layout, or an old one with a registry file, is refused and left as it is")
    func otherLayouts() throws {
        let newer = TemporaryContainer()
        let layout = Data("wormhole layout 2\n".utf8)
        try layout.write(to: newer.url.appendingPathComponent("layout"))
        #expect { _ = try GroupNotificationCenter(containerURL: newer.url) } throws: {
            ($0 as? WormholeError)?.code == .incompatibleContainer
        }
        #expect(try Data(contentsOf: newer.url.appendingPathComponent("layout")) == layout)
        #expect(try FileManager.default.contentsOfDirectory(atPath: newer.path) == ["layout"])

        let old = TemporaryContainer()
        try Data("WHRG old registry".utf8).write(to: old.url.appendingPathComponent("registry"))
        #expect { _ = try GroupNotificationCenter(containerURL: old.url) } throws: {
            ($0 as? WormholeError)?.code == .incompatibleContainer
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: old.path) == ["registry"])
    }
}

// MARK: Helpers

private func bigEndian(_ value: UInt32) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array($0) }
}

/// Sets the modification time of `path` (not following a link) to `seconds` since 1970.
private func setModificationTime(_ path: String, seconds: Int) throws {
    var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
    try #require(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0, "utimensat \(path): errno \(errno)")
}

/// Puts `bytes` into the spool folder of `center`'s listener under `name`, whole (written beside it, then renamed).
private func plantSegment(_ bytes: [UInt8], named name: String, for center: GroupNotificationCenter, in container: TemporaryContainer) throws {
    let id = try #require(center.endpoint.listenerSpool?.listener)
    let staging = container.path + "/.staging-" + name
    try Data(bytes).write(to: URL(fileURLWithPath: staging))
    try #require(rename(staging, container.path + "/spool/" + FileName.hex(id) + "/" + name) == 0)
}

/// Whether the spool folder of `center`'s listener still holds a segment, taken or not.
private func spoolHoldsSegments(of center: GroupNotificationCenter, in container: TemporaryContainer) -> Bool {
    guard let id = center.endpoint.listenerSpool?.listener else { return false }
    let names = (try? FileManager.default.contentsOfDirectory(atPath: container.path + "/spool/" + FileName.hex(id))) ?? []
    return names.contains { $0.hasSuffix(SpoolFolder.segmentSuffix) || $0.hasSuffix(SpoolFolder.takenSuffix) }
}

/// Posts `count` numbered notifications from another process, which must exit 0; returns its report line.
@discardableResult
private func postFromPeer(
    _ container: TemporaryContainer, _ name: String, object: String? = nil, start: Int = 0, count: Int = 1,
    extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String: Any] {
    var arguments = ["post", "--container", container.path, "--name", name, "--start", "\(start)", "--count", "\(count)"]
    if let object { arguments += ["--object", object] }
    let poster = try Peer("wormhole-test-peer", arguments + extra)
    #expect(try await poster.awaitExit(sourceLocation: sourceLocation) == 0, "poster: \(poster.errorOutput)", sourceLocation: sourceLocation)
    return poster.jsonLines().first ?? [:]
}

/// Runs `body` on a thread of its own and fails the test if it has not returned after `seconds` (the thread is
/// then left behind): for calls in this process that a hostile file could make hang.
func finishes<T: Sendable>(
    within seconds: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () throws -> T
) throws -> T {
    let outcome = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let result = Result { try body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else {
        Issue.record("\(what) did not return within \(seconds) s", sourceLocation: sourceLocation)
        throw Peer.Timeout(description: what)
    }
    return try outcome.withLock { $0! }.get()
}

/// Connects to a listener's socket as a raw peer would.
private func rawConnect(_ path: String) throws -> OwnedDescriptorBox {
    let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
    try #require(fd >= 0)
    let box = OwnedDescriptorBox(fd: fd)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    try #require(result == 0, "connect: errno \(errno)")
    return box
}

/// The identifier the registry lists for a peer listener: its entry's file, found by its pid.
private func listedIdentifier(_ peer: Peer, _ container: TemporaryContainer) -> String {
    let folder = container.path + "/registry/"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where FileName.value(ofHex: name) != nil {
        guard let bytes = try? [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + name))),
            let entry = try? RegistryFormat.decodeEntry(bytes), entry.pid == peer.pid
        else { continue }
        return name
    }
    return ""
}

/// The bytes of the regular files in `folder`.
private func folderBytes(_ folder: String) throws -> Int {
    try FileManager.default.contentsOfDirectory(atPath: folder).reduce(0) { total, name in
        var status = stat()
        guard lstat(folder + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return total }
        return total + Int(status.st_size)
    }
}

private func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// How many of this process's descriptors lead into the folder `roots` names: files and folders in it, and sockets
/// connected to a socket in it. Other tests run in this process at the same time, so descriptors are told
/// apart by where they lead rather than counted all together.
private func descriptorsInto(_ roots: [String]) -> Int {
    func isInside(_ path: String) -> Bool { roots.contains { path == $0 || path.hasPrefix($0 + "/") } }
    let numbers = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { CInt($0) }
    var count = 0
    for fd in numbers {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)") else { continue }
        if isInside(target) {
            count += 1
        } else if target.hasPrefix("socket:") {
            var address = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { continue }
            let path = withUnsafeBytes(of: address.sun_path) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if isInside(path) { count += 1 }
        }
    }
    return count
}

/// Runs `tool` with `arguments` in the current directory `folder`.
private func runInFolder(_ folder: String, _ tool: String, _ arguments: [String]) throws -> Peer {
    try Peer("/bin/sh", ["-c", #"cd "$0" && exec "$@""#, folder, tool] + arguments, absolute: true)
}
