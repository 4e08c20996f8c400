import Foundation
import Testing
import Wormhole
import WormholeTestSupport

@Suite("Retained notifications and the MMWormhole vocabulary", .throttled)
struct RetainedTests {
    @Test("a retained notification outlives its poster and is read by a new process")
    func outlivesPoster() async throws {
        let container = TemporaryContainer()
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "state", "--retain",
                                            "--user-info", #"{"value": "first"}"#])
        #expect(try await poster.awaitExit() == 0)
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.retainedNotification(named: .init("state"))?.userInfo?["value"] as? String == "first")
        let reader = try Peer("wormhole", ["retained", "--container", container.path, "--name", "state"])
        #expect(try await reader.awaitExit() == 0)
        #expect((reader.jsonLines().first?["userInfo"] as? [String: Any])?["value"] as? String == "first")
        let missing = try Peer("wormhole", ["retained", "--container", container.path, "--name", "nothing"])
        #expect(try await missing.awaitExit() == 1)
    }

    @Test("an observer can start with the current value, then hear every change, from other processes")
    func behaviourSubject() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.post(name: .init("level"), object: "app", userInfo: ["value": 1], retain: true)
        let recorder = Recorder()
        center.addObserver(forName: .init("level"), object: nil, includingRetained: true, queue: nil, using: recorder.block)
        #expect(try await recorder.wait(for: 1).first?.userInfo?["value"] as? Int == 1)
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "level", "--retain",
                                            "--user-info", #"{"value": 2}"#])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await recorder.wait(for: 2).last?.userInfo?["value"] as? Int == 2)
        // An observer filtering on another object is not handed the retained value.
        let other = Recorder()
        center.addObserver(forName: .init("level"), object: "elsewhere", includingRetained: true, queue: nil, using: other.block)
        let marker = Recorder()
        center.addObserver(forName: .init("level"), object: nil, includingRetained: true, queue: nil, using: marker.block)
        try await marker.wait(for: 1)
        #expect(other.all.isEmpty)
    }

    @Test("a durable observer that starts with the retained value gets it once, not again from its spool")
    func retainedAndSpooledOnce() async throws {
        let container = TemporaryContainer()
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "widget")
            durable.addObserver(forName: .init("level"), object: nil, queue: nil) { _ in }
        }
        // Retained, and spooled for the durable identity while it is down: the same post, twice over.
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "level", "--retain",
                                            "--user-info", #"{"value": 1}"#])
        #expect(try await poster.awaitExit() == 0)
        let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "widget")
        let recorder = Recorder()
        durable.addObserver(forName: .init("level"), object: nil, includingRetained: true, queue: nil, using: recorder.block)
        durable.deliverSpooledNotifications()
        let next = try Peer("wormhole", ["post", "--container", container.path, "--name", "level", "--user-info", #"{"value": 2}"#])
        #expect(try await next.awaitExit() == 0)
        let seen = try await recorder.wait(for: 2).map { $0.userInfo?["value"] as? Int }
        // The spool is handed over before the later post arrives: a duplicate would come between the two.
        #expect(seen == [1, 2])
    }

    @Test("a value retained while a reader is stopped is current when it resumes")
    func stoppedReader() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.post(name: .init("w"), object: nil, userInfo: ["value": "old"], retain: true)
        let reader = try Peer("wormhole-test-peer", ["watch-retained", "--container", container.path, "--name", "w"])
        try await reader.awaitLines(2)
        try reader.suspend()
        center.post(name: .init("w"), object: nil, userInfo: ["value": "new"], retain: true)
        #expect(center.retainedNotification(named: .init("w"))?.userInfo?["value"] as? String == "new")
        reader.signal(SIGCONT)
        try await reader.awaitLines(3)
        let values = reader.jsonLines().compactMap { $0["value"] as? String }
        #expect(values == ["old", "new"])
    }

    @Test("clearing forgets one value or all of them")
    func clearing() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for name in ["a", "b", String(repeating: "long-name-", count: 30)] {
            try center.postReporting(name: .init(name), object: nil, userInfo: ["value": name], retain: true)
            #expect(center.retainedNotification(named: .init(name))?.userInfo?["value"] as? String == name)
        }
        center.clearRetainedNotification(named: .init("a"))
        #expect(center.retainedNotification(named: .init("a")) == nil)
        #expect(center.retainedNotification(named: .init("b")) != nil)
        center.clearAllRetainedNotifications()
        #expect(center.retainedNotification(named: .init("b")) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/retained").isEmpty)
    }

    @Test("a retained value holding a class outside allowedClasses reads with userInfo nil")
    func retainedAllowedClasses() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.post(name: .init("d"), object: nil, userInfo: ["point": TestPoint(x: 1, y: 2)], retain: true)
        let strict = center.retainedNotification(named: .init("d"))
        #expect(strict != nil && strict?.userInfo == nil)
        #expect((center.retainedNotification(named: .init("d"), allowedClasses: [TestPoint.self])?.userInfo?["point"] as? TestPoint)?.y == 2)
    }

    @Test("post(name:object:retain:) needs no userInfo; every spelling of post and postReporting compiles and picks its form")
    func postSpellings() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let everything = Recorder()
        center.addObserver(forName: nil, object: nil, queue: nil, using: everything.block)
        // Without retain: (name:object:userInfo:), with the userInfo left out or given.
        center.post(name: .init("a"), object: nil)
        center.post(name: .init("b"), object: nil, userInfo: ["n": 1])
        // With retain: (name:object:userInfo:retain:), with the userInfo left out or given.
        center.post(name: .init("c"), object: nil, retain: true)
        center.post(name: .init("d"), object: "o", userInfo: ["n": 2], retain: true)
        center.post(name: .init("e"), object: nil, retain: false)
        try center.postReporting(name: .init("f"), object: nil)
        try center.postReporting(name: .init("g"), object: nil, userInfo: nil)
        try center.postReporting(name: .init("h"), object: nil, retain: true)
        try center.postReporting(name: .init("i"), object: nil, userInfo: ["n": 3], retain: true)
        let names = try await everything.wait(for: 9).map(\.name)
        #expect(Set(names) == Set(["a", "b", "c", "d", "e", "f", "g", "h", "i"]))
        #expect(try center.retainedNotificationNames().map(\.rawValue) == ["c", "d", "h", "i"])
        let retained = try #require(center.retainedNotification(named: .init("c")))
        #expect(retained.userInfo == nil && retained.object == nil)
        #expect(center.retainedNotification(named: .init("d"))?.userInfo?["n"] as? Int == 2)
    }

    @Test("typed messages can be retained")
    func typedRetained() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.retainedMessage(for: CartChanged.self) == nil)
        let message = CartChanged(itemIDs: [7], note: nil, at: Date(timeIntervalSinceReferenceDate: 5))
        try center.postReporting(message, retain: true)
        #expect(center.retainedMessage(for: CartChanged.self) == message)
    }

    @Test("MMWormhole's calls: pass, read after the sender is gone, listen, stop, clear")
    func mailbox() async throws {
        let container = TemporaryContainer()
        let wormhole = WormholeMailbox(try GroupNotificationCenter(containerURL: container.url))
        #expect { try wormhole.passMessage(["buttonNumber": 1], identifier: "") } throws: {
            ($0 as? WormholeError)?.code == .invalidNotification
        }
        // Another process passes a message, then exits.
        let sender = try Peer("wormhole", [
            "post", "--container", container.path, "--name", "wormhole.message.button", "--retain",
            "--user-info", #"{"message": {"buttonNumber": 1}}"#,
        ])
        #expect(try await sender.awaitExit() == 0)
        #expect((wormhole.message(withIdentifier: "button") as? [String: Int])?["buttonNumber"] == 1)

        let first = MessageBox<Int>(), second = MessageBox<Int>()
        let listener = wormhole.listenForMessage(withIdentifier: "button", queue: nil) { message in
            first.put((message as? [String: Int])?["buttonNumber"] ?? -1)
        }
        wormhole.listenForMessage(withIdentifier: "button", includingCurrent: true, queue: nil) { message in
            second.put((message as? [String: Int])?["buttonNumber"] ?? -1)
        }
        #expect(try second.take() == 1)
        try wormhole.passMessage(["buttonNumber": 2], identifier: "button")
        #expect(try first.take() == 2)
        #expect(try second.take() == 2)

        wormhole.stopListening(listener)
        try wormhole.passMessage(["buttonNumber": 3], identifier: "button")
        #expect(try second.take() == 3)
        #expect(first.waiting == 0, "a stopped listener hears nothing more")
        wormhole.stopListeningForMessage(withIdentifier: "button")
        let status = try #require(wormhole.center.listenerStatus().first)
        #expect(status.observing.isEmpty)

        wormhole.clearMessageContents(forIdentifier: "button")
        #expect(wormhole.message(withIdentifier: "button") == nil)
        try wormhole.passMessage("text", identifier: "other")
        wormhole.clearAllMessageContents()
        #expect(wormhole.message(withIdentifier: "other") == nil)
    }

    @Test("clearAllMessageContents forgets the mailbox's messages only: another process's widget status stays")
    func mailboxClearsItsOwn() async throws {
        let container = TemporaryContainer()
        let long = String(repeating: "identifier-", count: 12)
        // Names too long for a file name are stored by hash: a message and a non-message of each kind.
        let messages = ["wormhole.message.button", "wormhole.message." + long]
        let others = ["status", "status." + long, "wormhole.messages"]
        for name in messages + others {
            let poster = try Peer("wormhole", [
                "post", "--container", container.path, "--name", name, "--retain", "--user-info", #"{"message": "kept"}"#,
            ])
            #expect(try await poster.awaitExit() == 0, "\(poster.errorOutput)")
        }
        let wormhole = WormholeMailbox(try GroupNotificationCenter(containerURL: container.url))
        #expect(wormhole.message(withIdentifier: long) as? String == "kept")
        wormhole.clearAllMessageContents()
        #expect(wormhole.message(withIdentifier: "button") == nil)
        #expect(wormhole.message(withIdentifier: long) == nil)
        for name in others {
            let reader = try Peer("wormhole", ["retained", "--container", container.path, "--name", name])
            #expect(try await reader.awaitExit() == 0, "\(name) is not a mailbox message: it stays")
            #expect((reader.jsonLines().first?["userInfo"] as? [String: Any])?["message"] as? String == "kept")
        }
        let gone = try Peer("wormhole", ["retained", "--container", container.path, "--name", messages[0]])
        #expect(try await gone.awaitExit() == 1)
        // Every retained notification, under its own name.
        wormhole.center.clearAllRetainedNotifications()
        for name in others { #expect(wormhole.center.retainedNotification(named: .init(name)) == nil) }
    }

    @Test("clearAllMessageContents with a FIFO and damaged files planted among the retained ones: no wait, only messages go")
    func mailboxClearAmongPlanted() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let wormhole = WormholeMailbox(center)
        let long = String(repeating: "identifier-", count: 12)
        try wormhole.passMessage("gone", identifier: "button")
        try wormhole.passMessage("gone", identifier: long)
        try center.postReporting(name: .init("status"), object: nil, userInfo: ["kept": 1], retain: true)
        let folder = container.path + "/retained"
        let hex = { (name: String) in name.utf8.map { String(format: "%02x", $0) }.joined() }
        // A FIFO under a message's own file name, one under a hashed name; a damaged hashed file; one under a
        // message's name that holds garbage.
        let messageFIFO = folder + "/n-" + hex("wormhole.message.fifo")
        let hashedFIFO = folder + "/h-00112233445566ff"
        let damaged = folder + "/h-ffeeddccbbaa9988"
        let garbage = folder + "/n-" + hex("wormhole.message.garbage")
        try #require(mkfifo(messageFIFO, 0o600) == 0 && mkfifo(hashedFIFO, 0o600) == 0)
        try Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }).write(to: URL(fileURLWithPath: damaged))
        try Data("not a frame".utf8).write(to: URL(fileURLWithPath: garbage))

        wormhole.clearAllMessageContents()
        #expect(wormhole.message(withIdentifier: "button") == nil)
        #expect(wormhole.message(withIdentifier: long) == nil)
        #expect(!FileManager.default.fileExists(atPath: messageFIFO) && !FileManager.default.fileExists(atPath: garbage))
        // What cannot be read says nothing about whose it is: left.
        #expect(FileManager.default.fileExists(atPath: hashedFIFO) && FileManager.default.fileExists(atPath: damaged))
        #expect(center.retainedNotification(named: .init("status"))?.userInfo?["kept"] as? Int == 1)
    }
}
