import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeBridge
import WormholeRelay

/// Two hosts' containers, a bridge each, and a real `nats-server` with JetStream between them: what one group
/// posts under a routed name reaches the other's observers once, in order, through stops of either bridge and
/// of the server.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeTests {
    /// One host: its container, a center to post and observe with, and its bridge.
    final class Host: Sendable {
        let container = TemporaryContainer("host")
        let center: GroupNotificationCenter
        let recorder = Recorder()
        let routes: [RelayRoute]
        let bridge = Mutex<WormholeBridge?>(nil)

        init(observing name: String?, routes: [RelayRoute]) throws {
            center = try GroupNotificationCenter(containerURL: container.url)
            self.routes = routes
            // Observes for as long as the center lives.
            _ = center.addObserver(forName: name.map { Notification.Name($0) }, object: nil, queue: nil, using: recorder.block)
        }

        /// Starts a bridge to `server` (a new one, as a new run would), and waits until it is connected.
        func startBridge(_ server: NATSServer, options: WormholeBridge.Options = .init()) async throws {
            let bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes, options: options)
            bridge.start()
            self.bridge.withLock { $0 = bridge }
            try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        }

        func closeBridge() {
            let bridge = self.bridge.withLock { bridge in defer { bridge = nil }; return bridge }
            bridge?.close()
        }

        var status: BridgeStatus? { bridge.withLock { $0?.status } }

        func post(_ name: String, _ number: Int, payload: Int = 0) throws {
            var userInfo: [String: Any] = ["i": number]
            if payload > 0 { userInfo["blob"] = Data(repeating: 7, count: payload) }
            try center.postReporting(name: Notification.Name(name), object: "o", userInfo: userInfo)
        }

        deinit {
            closeBridge()
        }
    }

    @Test func carriesNotificationsBothWaysInOrderOnce() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.notifications(named: "cart.changed")]
        let a = try Host(observing: "cart.changed", routes: routes)
        let b = try Host(observing: "cart.changed", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        for i in 0..<50 { try a.post("cart.changed", i) }
        try await b.recorder.wait(for: 50)
        #expect(b.recorder.all.map(\.number) == Array(0..<50).map { Optional($0) })
        #expect(b.recorder.all.allSatisfy { $0.object == "o" })
        for i in 100..<110 { try b.post("cart.changed", i) }
        // A's recorder sees its own 50 and B's 10.
        try await a.recorder.wait(for: 60)
        #expect(a.recorder.all.map(\.number) == (Array(0..<50) + Array(100..<110)).map { Optional($0) })
        try await pollUntil("A's bridge counted B's posts") { a.status?.posted == 10 }
        #expect(b.status?.posted == 50)
        #expect(b.status?.duplicatesDropped == 0)
        // Nothing came back to where it was posted.
        #expect(b.recorder.all.map(\.number) == (Array(0..<50) + Array(100..<110)).map { Optional($0) })
    }

    @Test func durableWhileTheOtherBridgeIsStopped() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.notifications(prefixed: "job.")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: "job.done", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try a.post("job.done", 0)
        try await b.recorder.wait(for: 1)
        b.closeBridge()
        for i in 1...40 { try a.post("job.done", i) }
        try await pollUntil("A's bridge sent the 40") { a.status?.sent == 41 }
        #expect(b.recorder.all.count == 1)
        try await b.startBridge(server)
        try await b.recorder.wait(for: 41)
        #expect(b.recorder.all.map(\.number) == Array(0...40).map { Optional($0) })
    }

    @Test func whatIsPostedWhileTheServerIsDownArrivesOnceItIsBack() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.notifications(named: "cart.changed")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: "cart.changed", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try a.post("cart.changed", 0)
        try await b.recorder.wait(for: 1)
        server.kill()
        for i in 1...30 { try a.post("cart.changed", i) }
        try await pollUntil("A's bridge holds the 30 in its outbox") { a.status?.waiting == 30 }
        try await server.start()
        try await b.recorder.wait(for: 31)
        #expect(b.recorder.all.map(\.number) == Array(0...30).map { Optional($0) })
        try await pollUntil("A's outbox emptied") { a.status?.waiting == 0 }
        #expect((a.status?.reconnects ?? 0) >= 1)
    }

    @Test func aNotificationOverTheServersMaximumIsDroppedAndSaidAndTheRestGoOn() async throws {
        let server = try await NATSServer(maximumPayload: 64 << 10)
        let routes: [RelayRoute] = [.notifications(named: "photo")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: "photo", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try a.post("photo", 0, payload: 100 << 10)
        try a.post("photo", 1, payload: 10 << 10)
        try await b.recorder.wait(for: 1)
        #expect(b.recorder.all.map(\.number) == [1])
        try await pollUntil("A's bridge counted the drop") { a.status?.dropped == 1 }
        #expect(a.status?.connection == .connected)
    }

    @Test func aNameTooLongForASubjectIsDroppedAndSaidAndTheRestGoOn() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.notifications(prefixed: "long")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        // 4,000 bytes of name: 12,000 escaped, past any server's control line.
        try a.post("long" + String(repeating: "\u{7F}", count: 3996), 0)
        try a.post("long.short", 1)
        try await b.recorder.wait(for: 1)
        #expect(b.recorder.all.map(\.name) == ["long.short"])
        try await pollUntil("A's bridge counted the drop") { a.status?.dropped == 1 }
        #expect(a.status?.connection == .connected)
    }

    @Test func namesNATSDoesNotAllowInASubjectCrossAsThemselves() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.notifications(prefixed: "x")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        let names = ["x", "x.", "x..y", "x y", "x*", "x.>", "x%41", "xé.🚀", "x\ttab", "x.$JS.API"]
        for (i, name) in names.enumerated() { try a.post(name, i) }
        try await b.recorder.wait(for: names.count)
        #expect(b.recorder.all.map(\.name) == names)
    }

    @Test func aServerThatAsksForATokenTakesTheRightOneOnly() async throws {
        let server = try await NATSServer(token: "s3cret")
        let a = try Host(observing: nil, routes: [.notifications(named: "n")])
        var wrong = server.address
        wrong.token = "guess"
        let bridge = try WormholeBridge(containerURL: a.container.url, server: wrong, routes: a.routes)
        bridge.start()
        try await pollUntil("the refusal said") { bridge.status.lastError?.contains("Authorization") == true }
        #expect(bridge.status.connection != .connected)
        bridge.close()
        try await a.startBridge(server)
    }

    @Test func routesTheBridgeCannotCarryAreRefused() throws {
        let container = TemporaryContainer("host")
        let address = NATSServerAddress(host: "127.0.0.1", port: 1)
        var options = WormholeBridge.Options()
        options.subjectPrefix = "bad prefix"
        #expect(throws: BridgeError.self) {
            try WormholeBridge(containerURL: container.url, server: address, routes: [.notifications(named: "n")], options: options)
        }
        let first = try WormholeBridge(containerURL: container.url, server: address, routes: [.notifications(named: "n")])
        #expect(throws: WormholeError.self) {
            try WormholeBridge(containerURL: container.url, server: address, routes: [.notifications(named: "n")])
        }
        first.close()
        _ = try WormholeBridge(containerURL: container.url, server: address, routes: [.notifications(named: "n")])
    }

    @Test func retainedNotificationsAndGroupValuesConvergeOnEveryHostALateOneIncluded() async throws {
        let server = try await NATSServer()
        let routes: [RelayRoute] = [.retained(named: "nowPlaying"), .value(named: "unread")]
        let a = try Host(observing: nil, routes: routes)
        let b = try Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        func playing(_ host: Host) -> String? {
            host.center.retainedNotification(named: .init("nowPlaying"))?.userInfo?["song"] as? String
        }
        try a.center.postReporting(name: .init("nowPlaying"), object: nil, userInfo: ["song": "first"], retain: true)
        try await pollUntil("B holds A's retained notification") { playing(b) == "first" }
        let unreadA = GroupValue("unread", default: 0, in: a.center)
        let unreadB = GroupValue("unread", default: 0, in: b.center)
        unreadA.value = 5
        try await pollUntil("B reads A's value") { unreadB.value == 5 }
        try unreadB.update { $0 += 2 }
        try await pollUntil("A reads B's update") { unreadA.value == 7 }
        // Written on both hosts at once: both end with the same, the later write.
        unreadA.value = 10
        unreadB.value = 20
        try await pollUntil("both agree") { unreadA.value == unreadB.value && [10, 20].contains(unreadA.value) }
        // A host whose bridge starts after the writes gets what holds now.
        let c = try Host(observing: nil, routes: routes)
        try await c.startBridge(server)
        let unreadC = GroupValue("unread", default: 0, in: c.center)
        // Counted once each is written: the count comes a moment after what it counts.
        try await pollUntil("C holds the retained notification and the value, and counted both") {
            playing(c) == "first" && unreadC.value == unreadA.value && (c.status?.valuesApplied ?? 0) >= 2
        }
    }
}
