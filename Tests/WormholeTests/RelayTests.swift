import Foundation
import Testing
import Wormhole
import WormholeTestSupport

/// The relay between two groups, across processes, through the stand-in for WatchConnectivity: each test runs
/// relays, posters and observers as processes of their own on each side.
@Suite("Relay to another device", .serialized, .throttled)
struct RelayTests {
    /// Waits until `observer` printed `count` notifications (its ready line aside), and returns them per poster.
    private func awaitReceived(_ observer: Peer, _ count: Int, timeout: Double = 60) async throws -> [Int: [Int]] {
        // What arrived is compared even when not all of it did, so that a failure says what is missing.
        _ = try? await observer.awaitLines(count + 1, timeout: timeout)
        return RelayPair.received(by: observer)
    }

    @Test("Notifications cross both ways, once each and in order, and never come back")
    func bothWays() async throws {
        let pair = RelayPair(routes: ["notifications:to.watch:outgoing", "notifications:to.phone:incoming", "notifications:chat"])
        // The watch's routes mirror the phone's.
        let watchRoutes = ["notifications:to.watch:incoming", "notifications:to.phone:outgoing", "notifications:chat"]
        let onWatch = try await pair.startObserver(.watch, name: "to.watch")
        let onPhone = try await pair.startObserver(.phone, name: "to.phone")
        let chatOnPhone = try await pair.startObserver(.phone, name: "chat", client: "chat")
        let chatOnWatch = try await pair.startObserver(.watch, name: "chat", client: "chat")
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch, routes: watchRoutes)
        let toWatch = try await pair.post(.phone, name: "to.watch", count: 50)
        let toPhone = try await pair.post(.watch, name: "to.phone", count: 40)
        let chatPhone = try await pair.post(.phone, name: "chat", count: 30)
        let chatWatch = try await pair.post(.watch, name: "chat", count: 20)
        #expect(try await awaitReceived(onWatch, 50) == [toWatch: Array(0..<50)])
        #expect(try await awaitReceived(onPhone, 40) == [toPhone: Array(0..<40)])
        let expectedChat = [chatPhone: Array(0..<30), chatWatch: Array(0..<20)]
        #expect(try await awaitReceived(chatOnPhone, 50) == expectedChat)
        #expect(try await awaitReceived(chatOnWatch, 50) == expectedChat)
        // Nothing more comes: a relayed post is not sent back. A last notification each way, after which none
        // of the earlier ones may follow.
        let lastPhone = try await pair.post(.phone, name: "chat", count: 1, start: 100)
        #expect(try await awaitReceived(chatOnWatch, 51)[lastPhone] == [100])
        let lastWatch = try await pair.post(.watch, name: "chat", count: 1, start: 200)
        #expect(try await awaitReceived(chatOnPhone, 52)[lastWatch] == [200])
        #expect(RelayPair.received(by: chatOnPhone).values.map(\.count).reduce(0, +) == 52)
        #expect(RelayPair.received(by: chatOnWatch).values.map(\.count).reduce(0, +) == 52)
        _ = (phoneRelay, watchRelay)
    }

    @Test("What is posted while the other app or the relay is not running crosses when they run")
    func notRunning() async throws {
        let pair = RelayPair(routes: ["notifications:news"])
        let onWatch = try await pair.startObserver(.watch, name: "news")
        // Both relays ran once: the phone's relay is a durable listener from then on.
        var phoneRelay: Peer? = try await pair.startRelay(.phone)
        var watchRelay: Peer? = try await pair.startRelay(.watch)
        let first = try await pair.post(.phone, name: "news", count: 10)
        #expect(try await awaitReceived(onWatch, 10) == [first: Array(0..<10)])
        // The watch app not running: transfers queue on the way.
        watchRelay?.signal(SIGKILL)
        _ = try await watchRelay?.awaitExit()
        watchRelay = nil
        let second = try await pair.post(.phone, name: "news", count: 30, start: 10)
        // The phone's relay not running either: the group spools for it.
        phoneRelay?.signal(SIGKILL)
        _ = try await phoneRelay?.awaitExit()
        phoneRelay = nil
        let third = try await pair.post(.phone, name: "news", count: 30, start: 40)
        watchRelay = try await pair.startRelay(.watch)
        phoneRelay = try await pair.startRelay(.phone)
        let received = try await awaitReceived(onWatch, 70)
        #expect(received == [first: Array(0..<10), second: Array(10..<40), third: Array(40..<70)])
        _ = (phoneRelay, watchRelay)
    }

    @Test("A request on one device is answered by a responder on the other, within its time")
    func requests() async throws {
        let pair = RelayPair(routes: ["requests:ask:outgoing"])
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch, routes: ["requests:ask:incoming"])
        let responder = try Peer("wormhole", [
            "respond", "--container", pair.watch.path, "--name", "ask", "--reply", #"{"answer": 42}"#, "--count", "2",
        ])
        try await responder.awaitError(containing: "responding")
        let center = try GroupNotificationCenter(containerURL: pair.phone.url)
        for question in ["life", "universe"] {
            let reply = try await center.request(name: .init("ask"), object: "widget", userInfo: ["q": question], timeout: .seconds(20))
            #expect(reply.userInfo?["answer"] as? Int == 42)
            #expect(reply.object as? String == "widget")
        }
        #expect(try await responder.awaitExit() == 0)
        #expect(responder.jsonLines().compactMap { ($0["userInfo"] as? [String: String])?["q"] } == ["life", "universe"])
        // With nobody to answer on the watch, a request waits for its time rather than failing at once: the relay
        // answers for the name here.
        let started = ContinuousClock.now
        await #expect(throws: WormholeError.self) {
            _ = try await center.request(name: .init("ask"), object: nil, userInfo: nil, timeout: .milliseconds(500))
        }
        #expect(ContinuousClock.now - started >= .milliseconds(400))
        #expect(center.statistics.repliesDropped == 0)
        _ = (phoneRelay, watchRelay)
    }

    @Test("Retained notifications and group values end the same on both devices, the last write winning")
    func retainedAndValues() async throws {
        let pair = RelayPair(routes: ["retained:now", "value:count"])
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch)
        let phoneCenter = try GroupNotificationCenter(containerURL: pair.phone.url)
        let watchCenter = try GroupNotificationCenter(containerURL: pair.watch.url)
        let phoneCount = GroupValue("count", default: 0, in: phoneCenter)
        let watchCount = GroupValue("count", default: 0, in: watchCenter)
        try phoneCount.set(5)
        try await pollUntil("the watch reads 5") { watchCount.value == 5 }
        try watchCount.update { $0 += 10 }
        try await pollUntil("the phone reads 15") { phoneCount.value == 15 }
        phoneCenter.post(name: Notification.Name("now"), object: "song", userInfo: ["title": "one"], retain: true)
        try await pollUntil("the watch retains one") {
            watchCenter.retainedNotification(named: Notification.Name("now"))?.userInfo?["title"] as? String == "one"
        }
        // The same content again still crosses as the latest: an unchanged value arrives.
        watchCenter.post(name: Notification.Name("now"), object: "song", userInfo: ["title": "two"], retain: true)
        try await pollUntil("the phone retains two") {
            phoneCenter.retainedNotification(named: Notification.Name("now"))?.userInfo?["title"] as? String == "two"
        }
        phoneCenter.clearRetainedNotification(named: Notification.Name("now"))
        try await pollUntil("the watch forgets it") { watchCenter.retainedNotification(named: Notification.Name("now")) == nil }
        try phoneCount.reset()
        try await pollUntil("the watch reads the default") { watchCount.value == 0 }
        _ = (phoneRelay, watchRelay)
    }

    @Test("A value reset before its relay first ran is a write: it wins over an older one on the other device")
    func resetBeforeFirstRun() async throws {
        let pair = RelayPair(routes: ["value:count"])
        let watchCenter = try GroupNotificationCenter(containerURL: pair.watch.url)
        let watchCount = GroupValue("count", default: 0, in: watchCenter)
        try watchCount.set(7)
        let watchRelay = try await pair.startRelay(.watch)
        // Set and reset on the iPhone after the Watch's relay saw its 7, before the iPhone's relay ever ran.
        let phoneCenter = try GroupNotificationCenter(containerURL: pair.phone.url)
        let phoneCount = GroupValue("count", default: 0, in: phoneCenter)
        try phoneCount.set(1)
        try phoneCount.reset()
        let phoneRelay = try await pair.startRelay(.phone)
        try await pollUntil("the watch reads the default") { watchCount.value == 0 }
        #expect(phoneCount.value == 0)
        _ = (phoneRelay, watchRelay)
    }
}

/// The faults WatchConnectivity names, each through the stand-in: what waits crosses once the fault clears, and
/// the relay's status says what went wrong.
@Suite("Relay faults", .serialized, .throttled)
struct RelayFaultTests {
    /// Waits until the relay printed a status for which `condition` holds.
    private func awaitStatus(_ relay: Peer, _ what: String, _ condition: @escaping ([String: Any]) -> Bool) async throws {
        try await pollUntil(what, timeout: 30) { relay.jsonLines().contains { $0["ready"] == nil && condition($0) } }
    }

    private func errors(_ status: [String: Any], _ code: String) -> Int {
        (status["errors"] as? [String: Any])?[code] as? Int ?? 0
    }

    @Test("A transfer taken by a relay that dies while handling it is sent again: nothing is lost")
    func diesHandlingTransfer() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        // The watch's relay ran once, and then is not running while the phone queues.
        let first = try await pair.startRelay(.watch)
        first.signal(SIGKILL)
        _ = try await first.awaitExit()
        let poster = try await pair.post(.phone, name: "n", count: 20)
        try await pollUntil("transfers queued for the watch") { FileLink.waitingTransfers(from: .phone, directory: pair.link.url) > 0 }
        pair.set(.diesHandlingTransfer(.watch), true)
        let dying = try Peer("wormhole-relay-peer", [
            "--container", pair.watch.path, "--link", pair.link.path, "--side", "watch", "--route", "notifications:n",
        ])
        #expect(try await dying.awaitExit() == 9)
        let watchRelay = try await pair.startRelay(.watch)
        try await observer.awaitLines(21, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<20)])
        _ = (phoneRelay, watchRelay)
    }

    @Test("A transfer that comes twice is posted once")
    func repeatedTransfers() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        pair.set(.repeatsTransfers(.phone), true)
        pair.setReachable(false)
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch)
        let poster = try await pair.post(.phone, name: "n", count: 30)
        try await observer.awaitLines(31, timeout: 30)
        try await awaitStatus(watchRelay, "the repeated transfers dropped") { ($0["duplicates"] as? Int ?? 0) > 0 }
        // A last one, after which none of the repeats may still come.
        let last = try await pair.post(.phone, name: "n", count: 1, start: 30)
        try await observer.awaitLines(32, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<30), last: [30]])
        _ = phoneRelay
    }

    @Test(
        "Not paired, not installed, not activated: counted and shown, and what waits crosses once it clears",
        arguments: [FileLink.Fault.notPaired, .notInstalled(.watch), .notActivated(.phone)])
    func statusFaults(_ fault: FileLink.Fault) async throws {
        let code = switch fault {
        case .notPaired: "notPaired"
        case .notInstalled: "counterpartNotInstalled"
        default: "notActivated"
        }
        let pair = RelayPair(routes: ["notifications:n"])
        pair.set(fault, true)
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch)
        let poster = try await pair.post(.phone, name: "n", count: 5)
        try await awaitStatus(phoneRelay, "the phone relay shows \(code) with 5 waiting") {
            self.errors($0, code) >= 1 && $0["waiting"] as? Int == 5
        }
        #expect(RelayPair.received(by: observer).isEmpty)
        pair.set(fault, false)
        try await observer.awaitLines(6, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<5)])
        try await awaitStatus(phoneRelay, "nothing waits on the phone") { $0["waiting"] as? Int == 0 }
        _ = watchRelay
    }

    @Test("A notification too large for the link is dropped with an error; the ones after it cross")
    func tooLarge() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        for channel in ["message", "transfer"] {
            try Data("4000".utf8).write(to: pair.link.url.appendingPathComponent("limit-\(channel)"))
        }
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch)
        let big = try Peer("wormhole-test-peer", [
            "post", "--container", pair.phone.path, "--name", "n", "--count", "1", "--payload", "10000",
        ])
        #expect(try await big.awaitExit() == 0)
        let small = try await pair.post(.phone, name: "n", count: 3, start: 1)
        try await observer.awaitLines(4, timeout: 30)
        #expect(RelayPair.received(by: observer) == [small: [1, 2, 3]])
        try await awaitStatus(phoneRelay, "the phone relay counts the drop") {
            self.errors($0, "payloadTooLarge") == 1 && $0["dropped"] as? Int == 1 && $0["waiting"] as? Int == 0
        }
        _ = watchRelay
    }

    @Test("A payload that is not a relay's is dropped and counted; the relay goes on")
    func hostilePayload() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        let transfers = pair.link.url.appendingPathComponent("phone-to-watch/transfers")
        try FileManager.default.createDirectory(at: transfers, withIntermediateDirectories: true)
        var random = SeededGenerator(seed: 7)
        let garbage: [Data] = [
            Data(), Data("bplist00".utf8), Data((0..<3000).map { _ in UInt8.random(in: 0...255, using: &random) }),
            Data("{\"format\":1}".utf8),
        ]
        for (index, bytes) in garbage.enumerated() {
            try bytes.write(to: transfers.appendingPathComponent(String(format: "%020d", index + 1)))
        }
        let watchRelay = try await pair.startRelay(.watch)
        let poster = try await pair.post(.phone, name: "n", count: 5)
        try await observer.awaitLines(6, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<5)])
        try await awaitStatus(watchRelay, "the watch relay counts what it dropped") { $0["dropped"] as? Int == garbage.count }
        _ = phoneRelay
    }

    @Test("Planted files in the relay's folder (a FIFO, garbage, numbers at the end of the range) neither wedge nor crash it")
    func plantedFiles() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let folder = pair.phone.url.appendingPathComponent("relay/wormhole.relay")
        let outbox = folder.appendingPathComponent("outbox")
        try FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
        #expect(mkfifo(folder.appendingPathComponent("state").path, 0o600) == 0)
        #expect(mkfifo(folder.appendingPathComponent("posted").path, 0o600) == 0)
        #expect(mkfifo(outbox.appendingPathComponent("0000000000000001").path, 0o600) == 0)
        try Data("garbage".utf8).write(to: outbox.appendingPathComponent("0000000000000002"))
        try Data().write(to: outbox.appendingPathComponent("ffffffffffffffff"))
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try await pair.startRelay(.phone)
        let watchRelay = try await pair.startRelay(.watch)
        let poster = try await pair.post(.phone, name: "n", count: 5)
        try await observer.awaitLines(6, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<5)])
        _ = (phoneRelay, watchRelay)
    }
}

