import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeRelay
@testable import WormholeBridge

/// JetStream answers that are not what the bridge asked for, and a stream or consumer taken away under it: an
/// acknowledgement that says an error or that no stream wrote, a stream deleted and made again (its numbering
/// starts at 1 again), a consumer an operator deleted, a read of the stream answered with garbage, another
/// message or one whose headers do not read.
@Suite(.serialized, .throttled, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeJetStreamTests {
    private let routes: [RelayRoute] = [.notifications(named: "n")]

    // MARK: Acknowledgements of a publish

    /// A bridge on a fresh container to a fake server whose acknowledgement of each publish is `answer(n)` for the
    /// n-th publish (from 1); returns the bridge, its center and the server.
    private func publishing(
        _ answer: @escaping @Sendable (Int) -> String
    ) throws -> (WormholeBridge, GroupNotificationCenter, FakeNATSServer, TemporaryContainer) {
        let container = TemporaryContainer("lying")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let publishes = Atomic<Int>(0)
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            while let op = client.next(timeout: 30) {
                if case .pub(let subject, let replyTo?, _, _) = op, subject.hasPrefix("wormhole.n.") {
                    let n = publishes.add(1, ordering: .relaxed).newValue
                    guard client.deliver(replyTo, payload: Array(answer(n).utf8)) else { return }
                    continue
                }
                guard client.answerAsJetStream(op) else { return }
            }
        }
        var options = WormholeBridge.Options()
        options.timeout = .seconds(1)
        let bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes, options: options)
        return (bridge, center, server, container)
    }

    @Test("a publish acknowledged with an error stays in the outbox until one is stored")
    func publishAcknowledgedWithAnError() async throws {
        let (bridge, center, server, container) = try publishing { n in
            n <= 3
                ? #"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}"#
                : #"{"stream":"WORMHOLE_WORMHOLE","seq":1}"#
        }
        bridge.start()
        try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": 1])
        try await pollUntil("the refusal said") { bridge.status.lastError?.contains("maximum messages") == true }
        try await pollUntil("stored at last", timeout: 30) { bridge.status.sent == 1 }
        #expect(bridge.status.waiting == 0)
        bridge.close()
        _ = (server, container)
    }

    @Test("an answer to a publish that is not the stream's is not taken for stored")
    func publishAnsweredByAnotherThanTheStream() async throws {
        let (bridge, center, server, container) = try publishing { n in
            switch n {
            case 1: "{}"
            case 2: #"{"stream":"SOMETHING_ELSE","seq":9}"#
            case 3: #"{"stream":"WORMHOLE_WORMHOLE"}"#
            default: #"{"stream":"WORMHOLE_WORMHOLE","seq":1}"#
            }
        }
        bridge.start()
        try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": 1])
        try await pollUntil("the answer doubted") { bridge.status.lastError?.contains("does not say stream") == true }
        #expect(bridge.status.sent == 0)
        #expect(bridge.status.waiting == 1)
        try await pollUntil("stored at last", timeout: 30) { bridge.status.sent == 1 }
        #expect(bridge.status.waiting == 0)
        bridge.close()
        _ = (server, container)
    }

    // MARK: The stream and the consumer taken away

    /// A server, host A observing `n` and host B that posts it, both bridges connected.
    private func twoHosts() async throws -> (NATSServer, BridgeTests.Host, BridgeTests.Host) {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: "n", routes: routes)
        let b = try BridgeTests.Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        return (server, a, b)
    }

    @Test("a stream deleted and made again: the host takes what the new stream holds, and looks for no gap in the old numbering")
    func streamDeletedAndMadeAgain() async throws {
        let (server, a, b) = try await twoHosts()
        for i in 1...5 { try b.post("n", i) }
        try await a.recorder.wait(for: 5)
        a.closeBridge()
        let deleted = try await onDispatchThread { try NATSForger.call(server, "STREAM.DELETE.WORMHOLE_WORMHOLE") }
        #expect(deleted.contains("\"success\":true"), "\(deleted)")
        // B's bridge finds the stream gone, makes it again, and stores 6 and 7 as its messages 1 and 2.
        try b.post("n", 6)
        try b.post("n", 7)
        try await pollUntil("B stored 6 and 7 in the new stream", timeout: 30) { b.status?.sent == 7 }
        try await a.startBridge(server)
        try b.post("n", 8)
        try await a.recorder.wait(for: 8, timeout: 30)
        try await Task.sleep(for: .milliseconds(300))
        #expect(a.recorder.all.map(\.number) == Array(1...8).map { Optional($0) })
        #expect(a.status?.gapsFilled == 0)
        #expect(a.status?.duplicatesDropped == 0)
    }

    @Test("a consumer an operator deletes is made again where it was, while the bridge runs and while it does not")
    func consumerDeletedByAnOperator() async throws {
        let (server, a, b) = try await twoHosts()
        try b.post("n", 1)
        try await a.recorder.wait(for: 1)
        let consumer = "host-" + String(try NATSForger.device(of: a.container), radix: 16)
        // While it runs: what is posted right after is not lost while the consumer is made again.
        let deleted = try await onDispatchThread { try NATSForger.call(server, "CONSUMER.DELETE.WORMHOLE_WORMHOLE.\(consumer)") }
        #expect(deleted.contains("\"success\":true"), "\(deleted)")
        for i in 2...4 { try b.post("n", i) }
        try await a.recorder.wait(for: 4, timeout: 30)
        #expect((a.status?.reconnects ?? 0) >= 1)
        // While it is stopped: what is posted meanwhile comes once it runs again.
        a.closeBridge()
        _ = try await onDispatchThread { try NATSForger.call(server, "CONSUMER.DELETE.WORMHOLE_WORMHOLE.\(consumer)") }
        for i in 5...7 { try b.post("n", i) }
        try await pollUntil("B stored them") { b.status?.sent == 7 }
        try await a.startBridge(server)
        try await a.recorder.wait(for: 7, timeout: 30)
        try await Task.sleep(for: .milliseconds(300))
        #expect(a.recorder.all.map(\.number) == Array(1...7).map { Optional($0) })
    }

    // MARK: Reading the stream

    @Test("a message passed over whose headers do not read is dropped as the consumer's would be, and what follows comes")
    func gapReadOfAMessageWhoseHeadersDoNotRead() async throws {
        let (server, a, b) = try await twoHosts()
        try b.post("n", 1)
        try await a.recorder.wait(for: 1)
        a.closeBridge()
        // The stream's next message: another client's, whose headers do not read; then B's 2.
        let forged = NATSForger.hpub(
            try NATSForger.subject("n"), rawHeaders: "abcde",
            payload: try NATSForger.payload(RelayItem(link: 1, poster: 7, sequence: 1, name: "n")))
        _ = try await onDispatchThread { try NATSForger.send(server, forged) }
        try b.post("n", 2)
        try await pollUntil("B stored 2") { b.status?.sent == 2 }
        // A's consumer passes the forged one over, as a replica that lagged would (after 1 again, when A stopped
        // before its acknowledgement of 1 was in).
        let device = try NATSForger.device(of: a.container)
        var skipped: UInt64?
        for _ in 0..<2 where skipped != 2 {
            skipped = try await onDispatchThread { try NATSForger.skip(server, consumerOf: device) }
        }
        #expect(skipped == 2)
        try await a.startBridge(server)
        try await a.recorder.wait(for: 2, timeout: 30)
        #expect(a.recorder.all.map(\.number) == [1, 2])
        #expect(a.status?.gapsFilled == 1)
        #expect(a.status?.dropped == 1)
    }

    @Test("a read of the stream answered with garbage, another message, or one of another subject")
    func gapReadAnsweredWrongly() async throws {
        let item = { (link: UInt64, name: String) in
            try NATSForger.payload(RelayItem(link: link, poster: 7, sequence: link, name: name))
        }
        let host = "NATS/1.0\r\nWormhole-Host: f00d\r\n\r\n"
        let hostBase64 = Data(host.utf8).base64EncodedString()
        // Message 2 of the stream, as each answer gives it; message 1 and 3 come from the consumer.
        let answers: [(String, String)] = try [
            ("garbage", "not json"),
            ("another message", #"{"message":{"subject":"wormhole.n.n","seq":7,"hdrs":"\#(hostBase64)","data":"\#(Data(item(2, "n")).base64EncodedString())"}}"#),
            ("another subject", #"{"message":{"subject":"elsewhere.n","seq":2,"hdrs":"\#(hostBase64)","data":"\#(Data(item(2, "n")).base64EncodedString())"}}"#),
        ]
        for (what, answer) in answers {
            let container = TemporaryContainer("lying")
            let center = try GroupNotificationCenter(containerURL: container.url)
            let recorder = Recorder()
            _ = center.addObserver(forName: .init("n"), object: nil, queue: nil, using: recorder.block)
            let first = try item(1, "n")
            let third = try item(3, "n")
            let server = try FakeNATSServer { client in
                guard client.handshake() else { return }
                var pulls = 0
                while let op = client.next(timeout: 30) {
                    guard case .pub(let subject, let replyTo?, _, _) = op else {
                        guard client.answerAsJetStream(op) else { return }
                        continue
                    }
                    if subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") {
                        pulls += 1
                        let consumer = subject.split(separator: ".").last.map(String.init) ?? ""
                        let message: (UInt64, [UInt8])? = pulls == 1 ? (1, first) : pulls == 2 ? (3, third) : nil
                        guard let (sequence, payload) = message else {
                            guard client.answerAsJetStream(op) else { return }
                            continue
                        }
                        let ack = "$JS.ACK.WORMHOLE_WORMHOLE.\(consumer).1.\(sequence).\(sequence).1.0"
                        guard client.deliver(replyTo, as: "wormhole.n.n", replyTo: ack, headers: host, payload: payload) else { return }
                    } else if subject.hasPrefix("$JS.API.STREAM.MSG.GET.") {
                        guard client.deliver(replyTo, payload: Array(answer.utf8)) else { return }
                    } else {
                        guard client.answerAsJetStream(op) else { return }
                    }
                }
            }
            var options = WormholeBridge.Options()
            options.timeout = .seconds(1)
            let bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes, options: options)
            bridge.start()
            switch what {
            case "another subject":
                // Dropped: it is not a notification of the stream's; the one after it comes.
                try await recorder.wait(for: 2, timeout: 20)
                #expect(bridge.status.dropped == 1, "\(what)")
                #expect(bridge.status.gapsFilled == 1, "\(what)")
            default:
                // The server is not to be believed: the bridge says so and connects again; nothing is posted for it.
                try await pollUntil("the answer refused (\(what))") {
                    bridge.status.lastError?.contains("read") == true && server.connections >= 2
                }
                #expect(recorder.all.count == 1, "\(what)")
            }
            bridge.close()
        }
    }
}
