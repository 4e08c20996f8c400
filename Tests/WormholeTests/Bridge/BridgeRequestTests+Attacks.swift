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
        // The bridge's "no responder on another host", after the local reply, is no reply lost.
        #expect(a.center.statistics.repliesDropped == 0)
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
        // The first reply came; the other responder runs too, maybe later.
        try await pollUntil("both responders ran") { every.value >= 1 && eu.value >= 1 }
        try await pollUntil("B's bridge counted the request") { b.bridge.status.requestsReceived >= 1 }
        // Long enough for a second delivery to show itself.
        try await Task.sleep(for: .seconds(1))
        #expect(every.value == 1, "the responder for every sender ran once")
        #expect(eu.value == 1, "the responder for eu ran once")
        #expect(b.bridge.status.requestsReceived == 1)
    }

    @Test func theWaysBackOfAnsweredRequestsClose() async throws {
        let server = try await NATSServer()
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "b"] }
        try await b.start()
        // Another client of the server asks, each request from a reply name of its own, with an hour to wait.
        let count = 200
        var ops: [UInt8] = []
        let subject = try BridgeSubjects(prefix: "wormhole").request(for: "lookup", object: nil)
        let hour: Int64 = 3_600_000_000_000
        for index in 0..<count {
            let envelope: [String: Any] = [
                "id": "forged\(index)", "replyTo": "wormhole.reply.forged\(index)", "remaining": hour,
                "stamp": GroupNotificationCenter.uptimeNanoseconds,
            ]
            let archive = try UserInfoCodec.encode([RequestEnvelope.key: envelope], maximumSize: 1 << 20)
            let payload = try BridgeRequest(name: "lookup", object: nil, userInfo: archive, remaining: hour).encoded()
            ops += Array("PUB \(subject) _INBOX.forged.\(index) \(payload.count)\r\n".utf8) + payload + Array("\r\n".utf8)
        }
        let forged = ops
        _ = try await onDispatchThread { try NATSForger.send(server, forged) }
        try await pollUntil("B's bridge posted every request") { b.bridge.status.requestsReceived == count }
        // Every request was answered: no way back needs to stay open for the hour.
        try await pollUntil("the ways back of the answered requests closed", timeout: 10) {
            b.center.listenerStatus().allSatisfy { listener in
                !listener.observing.contains { $0.name?.hasPrefix("wormhole.reply.") == true }
            }
        }
    }

    @Test func aRequestWithANameOrSenderTagTooLongForASubjectStillCrosses() async throws {
        let server = try await NATSServer()
        let long = "long" + String(repeating: "x", count: 3500)
        let routes: [RelayRoute] = [.requests(named: "lookup"), .requests(named: long)]
        let a = try Host(server, routes: routes)
        let b = try Host(server, routes: routes)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "b"] }
        b.center.addResponder(forName: .init(long), object: nil, queue: nil) { _ in ["from": "b"] }
        let tagged = "t" + String(repeating: "x", count: 3400)
        b.center.addResponder(forName: .init("lookup"), object: tagged, queue: nil) { _ in ["from": "tagged"] }
        try await a.start()
        try await b.start()
        let tag = String(repeating: "é", count: 600)
        let reply = try await a.center.request(name: .init("lookup"), object: tag, timeout: .seconds(10))
        #expect(reply.userInfo?["from"] as? String == "b")
        let named = try await a.center.request(name: .init(long), timeout: .seconds(10))
        #expect(named.userInfo?["from"] as? String == "b")
        let fromTagged = try await a.center.request(name: .init("lookup"), object: tagged, timeout: .seconds(10))
        #expect(["b", "tagged"].contains(fromTagged.userInfo?["from"] as? String))
        #expect(a.bridge.status.dropped == 0)
    }

    @Test func aDeeplyNestedForgedPayloadIsDroppedNotACrash() async throws {
        let server = try await NATSServer()
        let b = try Host(server, routes: [.requests(named: "lookup"), .notifications(named: "deep")])
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "b"] }
        try await b.start()
        // A property list in XML of 20,000 nested arrays: Foundation's parser recurses once per level.
        let depth = 20_000
        let nested = Array(
            (#"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">"# + String(repeating: "<array>", count: depth)
                + String(repeating: "</array>", count: depth) + "</plist>").utf8)
        let request = try BridgeSubjects(prefix: "wormhole").request(for: "lookup", object: nil)
        let ops = Array("PUB \(request) _INBOX.forged.1 \(nested.count)\r\n".utf8) + nested + Array("\r\n".utf8)
            + NATSForger.hpub(try NATSForger.subject("deep"), host: "f00d", payload: nested)
        let said = try await onDispatchThread { try NATSForger.send(server, ops) }
        #expect(!said.contains("-ERR"), "\(said)")
        try await pollUntil("B's bridge dropped both") { b.bridge.status.dropped >= 2 }
        #expect(b.bridge.status.requestsReceived == 0)
        #expect(b.bridge.status.posted == 0)
    }

    @Test func aRequestMadeWhileTheServerIsDownCrossesOnceBothHostsAreBack() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in ["from": "b"] }
        try await a.start()
        try await b.start()
        server.kill()
        try await pollUntil("A's bridge saw the server go") { a.bridge.status.connection != .connected }
        let asked = Task { try await a.center.request(name: .init("lookup"), timeout: .seconds(60)).userInfo?["from"] as? String }
        try await Task.sleep(for: .milliseconds(300))
        try await server.start()
        #expect(try await asked.value == "b")
    }

    @Test func closingABridgeWithRequestsOpenEndsAtOnce() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in
            // Longer than the test takes to close the bridges after the first request came, even on a loaded
            // machine: no reply finds its way back.
            Thread.sleep(forTimeInterval: 2)
            return ["from": "b"]
        }
        try await a.start()
        try await b.start()
        let asked = (0..<20).map { _ in
            Task { try await a.center.request(name: .init("lookup"), timeout: .seconds(4)).userInfo?["from"] as? String }
        }
        try await pollUntil("B's bridge posted a request") { b.bridge.status.requestsReceived >= 1 }
        let began = ContinuousClock.now
        b.bridge.close()
        a.bridge.close()
        // A bound that only a hung close reaches.
        #expect(ContinuousClock.now - began < .seconds(60))
        for task in asked {
            await #expect(throws: WormholeError.self) { _ = try await task.value }
        }
    }

    @Test func forgedRequestsAreDroppedAndCountedAndTheRealOnesGoOn() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server, routes: [.requests(named: "lookup"), .requests(named: "other")])
        let calls = Calls()
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in
            calls.add()
            return ["from": "b"]
        }
        b.center.addResponder(forName: .init("unrouted"), object: nil, queue: nil) { _ in
            calls.add()
            return ["from": "b"]
        }
        try await a.start()
        try await b.start()
        let subjects = try BridgeSubjects(prefix: "wormhole")
        let lookup = subjects.request(for: "lookup", object: nil)
        let minute: Int64 = 60_000_000_000
        func archive(replyTo: String = "wormhole.reply.forged", remaining: Int64 = minute) throws -> [UInt8] {
            let envelope: [String: Any] = [
                "id": UUID().uuidString, "replyTo": replyTo, "remaining": remaining,
                "stamp": GroupNotificationCenter.uptimeNanoseconds,
            ]
            return try UserInfoCodec.encode([RequestEnvelope.key: envelope], maximumSize: 1 << 20)
        }
        func request(_ name: String = "lookup", object: String? = nil, userInfo: [UInt8]? = nil, remaining: Int64 = minute)
            throws -> [UInt8]
        {
            try BridgeRequest(name: name, object: object, userInfo: userInfo ?? archive(), remaining: remaining).encoded()
        }
        func pub(_ subject: String, _ replyTo: String?, _ payload: [UInt8]) -> [UInt8] {
            Array("PUB \(subject) \(replyTo.map { $0 + " " } ?? "")\(payload.count)\r\n".utf8) + payload + Array("\r\n".utf8)
        }
        let dropped: [[UInt8]] = [
            pub(lookup, "_INBOX.f.1", Array("garbage".utf8)),
            pub(lookup, "_INBOX.f.2", (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }),
            pub(lookup, nil, try request()),
            pub(lookup, "reply.elsewhere", try request()),
            pub(lookup, "$JS.API.STREAM.DELETE.x", try request()),
            pub(lookup, "_INBOX.f.3", try request(remaining: -1)),
            pub(lookup, "_INBOX.f.4", try request(remaining: Int64.min)),
            pub(lookup, "_INBOX.f.5", try request(remaining: 0)),
            pub(lookup, "_INBOX.f.6", try request(userInfo: archive(replyTo: "orders"))),
            pub(lookup, "_INBOX.f.7", try request(userInfo: archive(replyTo: "wormhole.request.lookup"))),
            pub(lookup, "_INBOX.f.8", try request(userInfo: Array("not an archive".utf8))),
            // Under another name's subject, or an object's.
            pub(lookup, "_INBOX.f.10", try request("other")),
            pub(lookup, "_INBOX.f.11", try request(object: "eu")),
            // A name B answers but does not route.
            pub(subjects.request(for: "unrouted", object: nil), "_INBOX.f.12", try request("unrouted")),
        ]
        // Served though forged: more time than a request may have is cut to it; the time that crosses is the
        // request's, whatever its envelope said.
        let served = pub(lookup, "_INBOX.f.13", try request(remaining: Int64.max))
            + pub(lookup, "_INBOX.f.9", try request(userInfo: archive(remaining: -5)))
        let said = try await onDispatchThread { try NATSForger.send(server, dropped.reduce([], +) + served) }
        #expect(!said.contains("-ERR"), "\(said)")
        try await pollUntil("B's bridge served the two") { b.bridge.status.requestsReceived == 2 }
        let reply = try await a.center.request(name: .init("lookup"), timeout: .seconds(30))
        #expect(reply.userInfo?["from"] as? String == "b")
        #expect(calls.value == 3)
        // The unrouted name's subject has no subscription: the server drops it, the bridge never sees it.
        #expect(b.bridge.status.dropped == dropped.count - 1, "\(b.bridge.status)")
    }

    @Test(arguments: ["", ".", "a.b", "*", ">", " ", "%", "%25", "é"])
    func aResponderForAnOddSenderTagAnswersThatTagOnly(tag: String) async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: tag, queue: nil) { _ in ["from": "b"] }
        try await a.start()
        try await b.start()
        let reply = try await a.center.request(name: .init("lookup"), object: tag, timeout: .seconds(30))
        #expect(reply.userInfo?["from"] as? String == "b")
        for other: String? in [nil, tag + "x", "x" + tag] {
            await #expect("from \(other ?? "no sender")") {
                _ = try await a.center.request(name: .init("lookup"), object: other, timeout: .seconds(30))
            } throws: { ($0 as? WormholeError)?.code == .noResponder }
        }
    }

    @Test func twoThousandRequestsInFlightAreAllAnswered() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { request in
            ["answer": (request.userInfo?["q"] as? Int ?? -1) * 2]
        }
        try await a.start()
        try await b.start()
        let count = 2_000
        let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
            for question in 0..<count {
                group.addTask {
                    let reply = try await a.center.request(name: .init("lookup"), userInfo: ["q": question], timeout: .seconds(120))
                    return reply.userInfo?["answer"] as? Int == question * 2
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answers == count)
        #expect(a.bridge.status.requestsSent == count)
        #expect(a.bridge.status.dropped == 0 && b.bridge.status.dropped == 0, "\(a.bridge.status) / \(b.bridge.status)")
        try await pollUntil("B's ways back closed") {
            b.center.listenerStatus().allSatisfy { listener in
                !listener.observing.contains { $0.name?.hasPrefix("wormhole.reply.") == true }
            }
        }
    }

    @Test func requestsThatWaitedSurviveAConnectionThatFailsAsItBegins() async throws {
        let container = TemporaryContainer("host")
        let center = try GroupNotificationCenter(containerURL: container.url)
        // A responder for another routed name: the bridge subscribes to its subject just before its round trip.
        center.addResponder(forName: .init("other"), object: nil, queue: nil) { _ in [:] }
        let attempts = Calls()
        let published = Calls()
        let server = try FakeNATSServer { client in
            attempts.add()
            let first = attempts.value == 1
            // Long enough for the request below to be taken while the bridge is not connected.
            if first { Thread.sleep(forTimeInterval: 1) }
            guard client.handshake() else { return }
            var subscribed = false
            while let op = client.next(timeout: 30) {
                switch op {
                case .sub(let subject, _) where subject.hasPrefix("wormhole.q."):
                    subscribed = true
                case .ping where first && subscribed:
                    // The round trip after the responders' subscriptions: the connection ends instead.
                    return
                case .pub(let subject, _, _, _) where subject == "wormhole.q.n.lookup":
                    published.add()
                default:
                    break
                }
                guard client.answerAsJetStream(op) else { return }
            }
        }
        let bridge = try WormholeBridge(
            containerURL: container.url, server: server.address, routes: [.requests(named: "lookup"), .requests(named: "other")])
        defer { bridge.close() }
        bridge.start()
        let asked = Task { _ = try await center.request(name: .init("lookup"), timeout: .seconds(30)) }
        defer { asked.cancel() }
        try await pollUntil("the bridge connected again") { attempts.value >= 2 && bridge.status.connection == .connected }
        try await pollUntil("the request that waited was published on the next connection", timeout: 10) { published.value == 1 }
    }

    @Test func aDeclineCountsWhetherItComesBeforeOrAfterThePostSaidHowManyItReached() async throws {
        let pending = PendingRequests()
        let none = WormholeError(.noResponder, "nobody")
        // The bridge's decline before the requester's post returned.
        pending.register("early")
        #expect(pending.decline("early"))
        pending.reached("early", count: 1, otherwise: none)
        await #expect { _ = try await pending.reply(to: "early") } throws: { ($0 as? WormholeError)?.code == .noResponder }
        #expect(!pending.decline("early"), "a decline after the end is passed over")
        // One listener of two declined: the request waits for the other, here until its timeout.
        pending.register("half")
        pending.reached("half", count: 2, otherwise: none)
        #expect(pending.decline("half"))
        pending.expire("half", after: 100_000_000, with: WormholeError(.timedOut, "no reply"))
        await #expect { _ = try await pending.reply(to: "half") } throws: { ($0 as? WormholeError)?.code == .timedOut }
        #expect(!pending.decline("never made"))
    }

    @Test(arguments: ["a b", "*", ">", "a..b", "x.", ".", "é.*.>", "%2E", "$JS.API.x"])
    func aNameNATSDoesNotAllowAsASubjectCrosses(name: String) async throws {
        let server = try await NATSServer()
        let a = try Host(server, routes: [.requests(named: name)])
        let b = try Host(server, routes: [.requests(named: name)])
        b.center.addResponder(forName: .init(name), object: nil, queue: nil) { _ in ["from": "b"] }
        try await a.start()
        try await b.start()
        let reply = try await a.center.request(name: .init(name), object: "a.b", timeout: .seconds(30))
        #expect(reply.userInfo?["from"] as? String == "b")
        #expect(a.bridge.status.dropped == 0 && b.bridge.status.dropped == 0)
    }

    @Test func aReplyTooLargeForTheServerFailsItsRequestAtOnce() async throws {
        let server = try await NATSServer()
        let a = try Host(server)
        let b = try Host(server)
        // 2 MiB: within what a group carries (16 MiB), over the server's 1 MiB.
        b.center.addResponder(forName: .init("lookup"), object: nil, queue: nil) { _ in
            ["blob": String(repeating: "x", count: 2 << 20)]
        }
        try await a.start()
        try await b.start()
        // The requester hears why (responderFailed), not its timeout (timedOut).
        await #expect { _ = try await a.center.request(name: .init("lookup"), timeout: .seconds(60)) } throws: {
            ($0 as? WormholeError)?.code == .responderFailed
        }
        #expect(b.bridge.status.dropped == 1)
    }
}
