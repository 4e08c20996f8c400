import Foundation
import Testing
import Wormhole
import WormholeTestSupport

/// The relay between two groups, across processes, through the stand-in for WatchConnectivity: each test runs
/// relays, posters and observers as processes of their own on each side.
@Suite("Relay to another device", .serialized)
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
}
