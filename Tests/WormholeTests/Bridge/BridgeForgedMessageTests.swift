import Foundation
import Testing
import Wormhole
import WormholeRelay
@testable import WormholeBridge

/// Messages on the stream that no bridge wrote, from another client the server lets publish under the prefix:
/// each is a counted, logged drop (or, for this host's own id, passed over; for a userInfo the codec refuses,
/// posted and withheld from the observers), never a crash, and never a message that keeps the host's consumer
/// from handing over what follows.
@Suite(.serialized, .throttled, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeForgedMessageTests {
    private let routes: [RelayRoute] = [.notifications(prefixed: "x"), .notifications(prefixed: "wor")]

    @Test("forged messages are dropped and counted, and what follows them arrives")
    func forgedMessagesAreDroppedAndTheRestGoOn() async throws {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: nil, routes: routes)
        let b = try BridgeTests.Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        let own = String(try NATSForger.device(of: a.container), radix: 16)
        let forger = "f00d"
        func item(_ link: UInt64, _ name: String, userInfo: [UInt8]? = nil) throws -> [UInt8] {
            try NATSForger.payload(RelayItem(link: link, poster: 7, sequence: link, name: name, userInfo: userInfo.map { Data($0) }))
        }
        let xa = try NATSForger.subject("x.a")
        // Each is dropped by the receiving bridge.
        var dropped: [[UInt8]] = [
            NATSForger.hpub(xa, host: forger, payload: Array("not a property list".utf8)),
            NATSForger.hpub(xa, host: forger, payload: (0..<900_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
            NATSForger.hpub(xa, host: forger, payload: try item(0, "x.a")),
            NATSForger.hpub(xa, host: forger, payload: try item(UInt64.max - 1, "x.a")),
            NATSForger.hpub(try NATSForger.subject("y"), host: forger, payload: try item(1, "y")),
            NATSForger.hpub(xa, host: "zz", payload: try item(1, "x.a")),
            NATSForger.hpub(xa, host: "0", payload: try item(1, "x.a")),
            NATSForger.hpub(xa, host: nil, payload: try item(1, "x.a")),
            NATSForger.hpub(xa, rawHeaders: "abcde", payload: try item(1, "x.a")),
            // A name of another subject than the one it came on: a client allowed to publish on x.a only.
            NATSForger.hpub(xa, host: forger, payload: try item(2, "x.secret")),
        ]
        // Requests and replies of the group, which no bridge carries, under a prefix that takes them by its letters.
        for name in ["wormhole.request.lookup", "wormhole.reply.0123456789abcdef0123456789abcdef"] {
            dropped.append(NATSForger.hpub(try NATSForger.subject(name), host: forger, payload: try item(3, name)))
        }
        // Passed over as this host's own.
        let passed = NATSForger.hpub(xa, host: own, payload: try item(1, "x.a"))
        // Posted by the bridge, refused by the observer's codec: a keyed archive that once crashed Foundation.
        let hostile = CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3, 4])), ("NS.objects", .uids([5, 7]))]),
            .classEntry("NSDictionary"), .string("a"), .string("b"),
            .object(class: 6, fields: [("NS.intval", .integer(3))]), .classEntry("NSNumber"),
            .object(class: 2, fields: [("NS.keys", .uids([3, 4])), ("NS.objects", .uids([3]))]),
        ])
        let hostileMessage = NATSForger.hpub(
            try NATSForger.subject("x.hostile"), host: forger, payload: try item(4, "x.hostile", userInfo: hostile))
        let ops = dropped.reduce([], +) + passed + hostileMessage
        // A first connection slow to make the stream on a loaded machine may have been made again: counted from here.
        let reconnects = a.status?.reconnects
        let said = try await onDispatchThread { try NATSForger.send(server, ops) }
        #expect(!said.contains("-ERR"), "\(said)")
        try b.post("x.legit", 1)
        try await a.recorder.wait(for: 2, timeout: 30)
        try await pollUntil("A's bridge took every forged message") { (a.status?.posted ?? 0) >= 2 }
        try await Task.sleep(for: .milliseconds(500))
        // The hostile archive's notification comes without its userInfo, which the observer's codec refused.
        #expect(a.recorder.all.map(\.name) == ["x.hostile", "x.legit"])
        #expect(a.recorder.all.first?.userInfo == nil)
        #expect(a.status?.dropped == dropped.count, "\(a.status.map { "\($0)" } ?? "")")
        // The hostile archive and the legitimate one; nothing else.
        #expect(a.status?.posted == 2)
        #expect(a.status?.connection == .connected)
        #expect(a.status?.reconnects == reconnects, "\(a.status.map { "\($0)" } ?? "")")
    }

    @Test("a message that is not from the host's consumer, published to its pull's inbox, is neither posted nor acknowledged")
    func aMessageToThePullInboxFromElsewhere() async throws {
        let container = TemporaryContainer("forged")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        _ = center.addObserver(forName: nil, object: nil, queue: nil, using: recorder.block)
        let item = try NATSForger.payload(RelayItem(link: 1, poster: 7, sequence: 1, name: "x.a"))
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            while let op = client.next() {
                if case .pub(let subject, let replyTo?, _, _) = op, subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") {
                    // A forger's reply subject, and one that names the stream and another consumer.
                    for ack in ["$JS.ACK.FORGED.x.1.1.1.1.0", "$JS.ACK.WORMHOLE_WORMHOLE.host-1.1.99.1.1.0", "elsewhere"] {
                        client.deliver(
                            replyTo, replyTo: ack, headers: "NATS/1.0\r\nWormhole-Host: f00d\r\n\r\n", payload: item)
                    }
                    client.serveJetStream(for: 30)
                    return
                }
                guard client.answerAsJetStream(op) else { return }
            }
        }
        var options = WormholeBridge.Options()
        options.timeout = .seconds(2)
        let bridge = try WormholeBridge(
            containerURL: container.url, server: server.address, routes: routes, options: options)
        bridge.start()
        try await pollUntil("the bridge dropped the three") { bridge.status.dropped == 3 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(recorder.all.isEmpty)
        #expect(bridge.status.posted == 0)
        bridge.close()
    }
}
