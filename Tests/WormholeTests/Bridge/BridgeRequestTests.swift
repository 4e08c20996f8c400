import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeBridge
import WormholeRelay

/// Requests across hosts: two hosts' containers, a bridge each, and a real `nats-server` between them. A request
/// made on one host reaches a responder on the other and its reply comes back; when no host has a responder,
/// `noResponder` comes back at once, not at the timeout.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeRequestTests {
    /// One host: its container, a center, and its bridge, which carries requests for `lookup` both ways.
    final class Host: Sendable {
        let container = TemporaryContainer("host")
        let center: GroupNotificationCenter
        let bridge: WormholeBridge

        init(_ server: NATSServer, routes: [RelayRoute] = [.requests(named: "lookup")]) throws {
            center = try GroupNotificationCenter(containerURL: container.url)
            bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes)
        }

        func start() async throws {
            bridge.start()
            try await pollUntil("the bridge connected") { self.bridge.status.connection == .connected }
        }

        deinit {
            bridge.close()
        }
    }

    private static func isNoResponder(_ error: any Error) -> Bool {
        (error as? WormholeError)?.code == .noResponder
    }

    @Test func aRequestReachesAResponderOnAnotherHostAndItsReplyComesBack() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { request in
            let question = request.userInfo?["q"] as? Int ?? -1
            if question < 0 { throw CocoaError(.featureUnsupported) }
            return ["answer": question * 2, "from": "b", "object": request.object ?? "none"]
        }
        try await a.start()
        try await b.start()
        for question in 0..<10 {
            let reply = try await a.center.request(name: .init("lookup"), object: "eu", userInfo: ["q": question], timeout: .seconds(120))
            #expect(reply.userInfo?["answer"] as? Int == question * 2)
            #expect(reply.userInfo?["from"] as? String == "b")
            #expect(reply.userInfo?["object"] as? String == "eu", "the sender tag crosses")
        }
        // A responder's error crosses as the requester's error.
        await #expect { _ = try await a.center.request(name: .init("lookup"), userInfo: ["q": -1], timeout: .seconds(120)) } throws: {
            ($0 as? WormholeError)?.code == .responderFailed
        }
        #expect(a.bridge.status.requestsSent == 11)
        try await pollUntil("B's bridge counted the requests") { b.bridge.status.requestsReceived == 11 }
        #expect(a.bridge.status.dropped == 0 && b.bridge.status.dropped == 0)
    }

    @Test func aRequestMadeWhileTheBridgeIsStoppedIsCarriedOnceItRunsAgain() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "b"] }
        try await b.start()
        try await a.start()
        a.bridge.close()
        // A's bridge is a durable listener of the name: the request waits in its spool.
        let asked = Task { try await a.center.request(name: .init("lookup"), timeout: .seconds(120)).userInfo?["from"] as? String }
        try await pollUntil("the request waits in the stopped bridge's spool") {
            a.center.listenerStatus().first { $0.clientIdentifier == WormholeBridge.defaultClientIdentifier }?.spooledNotifications == 1
        }
        let again = try WormholeBridge(containerURL: a.container.url, server: server.address, routes: [.requests(named: "lookup")])
        defer { again.close() }
        again.start()
        #expect(try await asked.value == "b")
        #expect(again.status.requestsSent == 1)
    }

    @Test func noResponderOnAnyHostComesBackAtOnceAndALocalResponderStillAnswers() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        try await a.start()
        try await b.start()
        // The bridge is a listener of A's request name, and says that no host answers.
        await #expect { _ = try await a.center.request(name: .init("lookup"), timeout: .seconds(600)) } throws: { Self.isNoResponder($0) }
        #expect(a.bridge.status.requestsSent == 1)
        // A responder on A itself: the bridge's "no responder elsewhere" does not end the request.
        let local = a.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "a"] }
        let reply = try await a.center.request(name: .init("lookup"), timeout: .seconds(120))
        #expect(reply.userInfo?["from"] as? String == "a")
        // The bridge, reached too, carries it as well, maybe after the local reply came.
        try await pollUntil("the bridge carried the second request") { a.bridge.status.requestsSent == 2 }
        a.center.removeObserver(local)
        // A name the bridges do not route: the request never leaves the host (the bridge is no listener of it).
        await #expect { _ = try await a.center.request(name: .init("other"), timeout: .seconds(600)) } throws: { Self.isNoResponder($0) }
        #expect(a.bridge.status.requestsSent == 2)
    }

    @Test func aResponderForOneSenderAnswersItsSenderOnly() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: "eu.west", queue: nil) { _ in ["from": "b"] }
        try await a.start()
        try await b.start()
        let reply = try await a.center.request(name: .init("lookup"), object: "eu.west", timeout: .seconds(120))
        #expect(reply.userInfo?["from"] as? String == "b")
        for other: String? in ["eu", "eu.west.1", nil] {
            await #expect("from \(other ?? "no sender")") {
                _ = try await a.center.request(name: .init("lookup"), object: other, timeout: .seconds(600))
            } throws: { Self.isNoResponder($0) }
        }
    }

    @Test func aResponderThatComesAndGoesIsFoundThenNotWithoutRestartingTheBridges() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        try await a.start()
        try await b.start()
        // A responder in another process of B's host, started after B's bridge: the bridge sees it in the registry.
        let responder = try Peer("wormhole", [
            "respond", "--container", b.container.path, "--name", "lookup", "--reply", #"{"from": "tool"}"#,
        ])
        try await responder.awaitError(containing: "responding")
        let answered = try await untilRequest(from: a) { $0?.userInfo?["from"] as? String == "tool" }
        #expect(answered)
        responder.signal(SIGTERM)
        _ = try await responder.awaitExit()
        // A request the other bridge takes in the second before it looks again waits for its timeout.
        let refused = try await untilRequest(from: a, timeout: .seconds(2)) { $0 == nil }
        #expect(refused, "noResponder again once the responder is gone")
    }

    /// Asks A for `lookup` until `done` holds of the reply (nil for `noResponder`), at most for 60 seconds; a
    /// request that times out counts as neither.
    private func untilRequest(from host: Host, timeout: Duration = .seconds(30), _ done: (Notification?) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let reply: Notification?
            do {
                reply = try await host.center.request(name: .init("lookup"), timeout: timeout)
            } catch let error as WormholeError where error.code == .noResponder {
                reply = nil
            } catch let error as WormholeError where error.code == .timedOut {
                continue
            }
            if done(reply) { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
