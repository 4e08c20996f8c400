import Foundation
import Synchronization
import Testing
import Wormhole
@testable import WormholeBridge
import WormholeEngine
import WormholeRelay

/// Requests across hosts under attack: a responder must run once per request, the ways back of other hosts'
/// requests must not pile up, and names or sender tags too long for a NATS subject as they are must still cross.
extension BridgeRequestTests {
    /// How many times a responder ran.
    final class Calls: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func aHostsOwnRequestDoesNotComeBackThroughItsBridge() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        let calls = Calls()
        a.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in
            calls.add()
            return ["from": "a"]
        }
        // A's bridge subscribes to the request's subject (it has a responder) before it says it is connected.
        try await a.start()
        try await b.start()
        for _ in 0..<5 {
            let reply = try await a.center.request(name: .init("lookup"), timeout: .seconds(60))
            #expect(reply.userInfo?["from"] as? String == "a")
        }
        // Long enough for a request echoed back by the server to be posted here a second time.
        try await Task.sleep(for: .seconds(1))
        #expect(calls.value == 5, "the local responder ran once per request, not again for the bridge's own echo")
        #expect(a.bridge.status.requestsReceived == 0)
    }

    @Test func aRequestReachesEachResponderOfAnotherHostOnce() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        let every = Calls()
        let eu = Calls()
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in
            every.add()
            return ["from": "every"]
        }
        b.center.addResponder(forName: .init("lookup"), object: "eu", queue: nil) { _ in
            eu.add()
            return ["from": "eu"]
        }
        try await a.start()
        try await b.start()
        _ = try await a.center.request(name: .init("lookup"), object: "eu", timeout: .seconds(60))
        try await Task.sleep(for: .seconds(1))
        #expect(every.value == 1, "the responder for every sender ran once")
        #expect(eu.value == 1, "the responder for eu ran once")
        #expect(b.bridge.status.requestsReceived == 1)
    }
}
