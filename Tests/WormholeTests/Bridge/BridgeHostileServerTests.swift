import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeBridge
import WormholeRelay

/// A bridge connected to something that is not a well-behaved NATS server (``FakeNATSServer``): garbage, frames
/// cut short, absurd INFO, floods, silence. Nothing crashes, no thread waits for ever, nothing grows without
/// bound; the bridge says what went wrong in its status, connects again with a growing wait, and closes at once.
@Suite(.serialized, .throttled)
struct BridgeHostileServerTests {
    /// A bridge on a fresh container, to `server`, each step bounded by `timeout`.
    private static func bridge(
        _ server: FakeNATSServer, _ container: TemporaryContainer, timeout: Duration = .seconds(1)
    ) throws -> WormholeBridge {
        var options = WormholeBridge.Options()
        options.timeout = timeout
        return try WormholeBridge(
            containerURL: container.url, server: server.address, routes: [.notifications(named: "n")], options: options)
    }

    /// Closes `bridge` on a thread of its own and returns how long that took.
    private static func timedClose(_ bridge: WormholeBridge) async throws -> Duration {
        try await onDispatchThread {
            let start = ContinuousClock.now
            bridge.close()
            return ContinuousClock.now - start
        }
    }

    /// Runs a bridge against a server playing `script` on every connection: the bridge must say an error (holding
    /// `text` when given), connect again at least twice, stay alive, and close within two seconds.
    private func expectRefusedAndTriedAgain(
        saying text: String? = nil, timeout: Duration = .seconds(1), sourceLocation: SourceLocation = #_sourceLocation,
        _ script: @escaping @Sendable (FakeNATSServer.Client) -> Void
    ) async throws {
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer(script)
        let bridge = try Self.bridge(server, container, timeout: timeout)
        bridge.start()
        try await pollUntil("the bridge tried three times", timeout: 30, sourceLocation: sourceLocation) {
            server.connections >= 3 && bridge.status.lastError != nil
        }
        let error = bridge.status.lastError ?? ""
        if let text { #expect(error.contains(text), "last error: \(error)", sourceLocation: sourceLocation) }
        #expect(bridge.status.connection == .connecting, sourceLocation: sourceLocation)
        let took = try await Self.timedClose(bridge)
        // A bound that only a close waiting for ever passes, never a measure of speed on a loaded machine.
        #expect(took < .seconds(30), "close took \(took)", sourceLocation: sourceLocation)
        #expect(bridge.status.connection == .stopped, sourceLocation: sourceLocation)
    }

    // MARK: The handshake

    @Test func garbageInsteadOfINFO() async throws {
        try await expectRefusedAndTriedAgain(saying: "garbage", timeout: .seconds(30)) { $0.write("HTTP/1.1 400 Bad Request\r\n\r\n") }
        try await expectRefusedAndTriedAgain(saying: "garbage", timeout: .seconds(30)) { $0.write("INFO this is not JSON\r\n") }
    }

    @Test func closedInTheMiddleOfINFO() async throws {
        try await expectRefusedAndTriedAgain(saying: "closed the connection", timeout: .seconds(30)) { $0.write("INFO {\"server_id\":\"FA") }
    }

    @Test func absurdMaximumPayloads() async throws {
        for value in ["0", "-1", "-9223372036854775808"] {
            try await expectRefusedAndTriedAgain(saying: "max_payload", timeout: .seconds(30)) { client in
                client.write(FakeNATSServer.info("\"max_payload\":\(value)"))
                _ = client.next(timeout: 2)
            }
        }
    }

    @Test("an INFO line of 10 MB is refused once it passes the longest control line")
    func tenMegabyteINFO() async throws {
        // A long handshake timeout: on a loaded machine, reading 64 KiB of it may take longer than a second.
        try await expectRefusedAndTriedAgain(saying: "control line", timeout: .seconds(30)) { client in
            client.write("INFO {\"server_id\":\"" + String(repeating: "x", count: 10 << 20) + "\"}\r\n")
        }
    }

    @Test("a server that never ends its handshake is left after the timeout: silence, +OK or PING forever, INFO a byte at a time")
    func handshakeThatNeverEnds() async throws {
        try await expectRefusedAndTriedAgain(saying: "handshake") { client in
            // INFO, then never a PONG.
            client.write(FakeNATSServer.info())
            _ = client.next(timeout: 30)
        }
        for chatter in ["+OK\r\n", "PING\r\n", "INFO {}\r\n"] {
            try await expectRefusedAndTriedAgain(saying: "handshake") { client in
                client.write(FakeNATSServer.info())
                while !client.isClosed, client.write(chatter) { usleep(100_000) }
            }
        }
        try await expectRefusedAndTriedAgain(saying: "handshake") { client in
            for byte in FakeNATSServer.info().utf8 {
                guard client.write([byte]) else { return }
                usleep(200_000)
            }
        }
    }

    @Test func closedWhileConnectingToASilentServerReturnsAtOnce() async throws {
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer { client in _ = client.next(timeout: 60) }
        let bridge = try Self.bridge(server, container, timeout: .seconds(120))
        bridge.start()
        try await pollUntil("the bridge connected its socket") { server.connections == 1 }
        try await Task.sleep(for: .milliseconds(200))
        let took = try await Self.timedClose(bridge)
        // Far under the two minutes a close that waited out the handshake would take.
        #expect(took < .seconds(60), "close took \(took)")
        #expect(bridge.status.connection == .stopped)
    }

    // MARK: After the handshake

    @Test("a message cut short, for a subscription never made, or claiming 1 GB")
    func badMessages() async throws {
        // Closed or failing a write, whichever the bridge sees first.
        try await expectRefusedAndTriedAgain { client in
            guard client.handshake() else { return }
            client.write("MSG x 1 100\r\nonly ten b")
        }
        try await expectRefusedAndTriedAgain(saying: "over the server's maximum", timeout: .seconds(30)) { client in
            guard client.handshake() else { return }
            client.write("HMSG x 1 1073741824 1073741824\r\n")
            _ = client.next(timeout: 5)
        }
        // A message for a subscription the bridge never made is no reason to leave: it is ignored.
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            for sid in [0, 99, 12345] { client.write("MSG x \(sid) 5\r\nhello\r\n") }
            client.serveJetStream()
        }
        let bridge = try Self.bridge(server, container)
        bridge.start()
        try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        try await Task.sleep(for: .seconds(1))
        #expect(bridge.status.connection == .connected)
        #expect(server.connections == 1)
        bridge.close()
    }

    @Test("INFO with an absurd max_payload, then a message claiming a terabyte: refused, never allocated")
    func hugeMaximumPayloadThenAHugeClaim() async throws {
        for maximum in ["9223372036854775807", "4611686018427387904"] {
            try await expectRefusedAndTriedAgain(saying: "over the server's maximum", timeout: .seconds(30)) { client in
                guard client.handshake(info: FakeNATSServer.info("\"max_payload\":\(maximum)")) else { return }
                client.write("MSG x 1 1099511627776\r\n")
                _ = client.next(timeout: 5)
            }
        }
    }

    @Test("a flood of messages to the pull's inbox is refused, not kept")
    func floodedPullInbox() async throws {
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            // Until the bridge pulls: its inbox is made.
            while let op = client.next(), client.answerAsJetStream(op) {
                if case .pub(let subject, _, _, _) = op, subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") { break }
            }
            guard let mailbox = client.mailbox else { return }
            let payload = [UInt8](repeating: 0x41, count: 1024)
            for _ in 0..<200_000 {
                guard client.deliver(mailbox, payload: payload) else { return }
            }
            client.serveJetStream(for: 30)
        }
        let bridge = try Self.bridge(server, container, timeout: .seconds(5))
        bridge.start()
        try await pollUntil("the flood refused", timeout: 60) { server.connections >= 2 }
        #expect(bridge.status.lastError?.contains("inbox") == true, "\(bridge.status)")
        bridge.close()
    }

    @Test("a PING storm from a server that reads nothing neither hangs the bridge nor its close")
    func pingStormUnread() async throws {
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            while let op = client.next(timeout: 2), client.answerAsJetStream(op) {
                if case .pub(let subject, _, _, _) = op, subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") { break }
            }
            let storm = [UInt8](String(repeating: "PING\r\n", count: 10_000).utf8)
            while !client.isClosed, client.write(storm) {}
        }
        let bridge = try Self.bridge(server, container, timeout: .seconds(2))
        bridge.start()
        try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        // The bridge's PONGs fill the socket the server does not read.
        try await Task.sleep(for: .seconds(2))
        let took = try await Self.timedClose(bridge)
        #expect(took < .seconds(30), "close took \(took)")
    }

    @Test("a server that fails each connection right after it was made is tried less and less often")
    func failingRightAfterConnectingBacksOff() async throws {
        let container = TemporaryContainer("hostile")
        let server = try FakeNATSServer { client in
            guard client.handshake() else { return }
            // Stream and consumer in place, the first pull sent: then garbage.
            while let op = client.next(), client.answerAsJetStream(op) {
                if case .pub(let subject, _, _, _) = op, subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") { break }
            }
            client.write("GARBAGE\r\n")
        }
        let bridge = try Self.bridge(server, container)
        bridge.start()
        try await Task.sleep(for: .seconds(5))
        let times = server.connectionTimes
        bridge.close()
        // 0.1 + 0.2 + 0.4 + 0.8 + 1.6 s of waiting: six connections in five seconds, not fifty.
        #expect(times.count <= 8, "\(times.count) connections in 5 s")
        #expect(times.count >= 3)
        if times.count >= 4 {
            #expect(times[times.count - 1] - times[times.count - 2] > times[1] - times[0])
        }
    }

    @Test("a server whose cluster is a thousand addresses, or itself, does not keep the bridge from coming back")
    func thousandConnectURLs() async throws {
        // The addresses named lead to a server that never answers: each takes the bridge a whole timeout.
        let silent = try FakeNATSServer { client in _ = client.next(timeout: 30) }
        let urls = (Array(repeating: "\"127.0.0.1:\(silent.port)\"", count: 1000)).joined(separator: ",")
        let container = TemporaryContainer("hostile")
        let portBox = Mutex<UInt16>(0)
        let accepted = Atomic<Int>(0)
        let server = try FakeNATSServer { client in
            // Every other connection is closed at once: the bridge then tries the others its cluster named.
            guard accepted.add(1, ordering: .relaxed).newValue % 2 == 1 else { return }
            let own = portBox.withLock { $0 }
            let info = FakeNATSServer.info("\"connect_urls\":[\(urls),\"127.0.0.1:\(own)\",\"localhost:\(own)\"]")
            guard client.handshake(info: info) else { return }
            client.serveJetStream(for: 0.5)
        }
        portBox.withLock { $0 = server.port }
        let bridge = try Self.bridge(server, container, timeout: .milliseconds(500))
        bridge.start()
        try await Task.sleep(for: .seconds(15))
        let comebacks = server.connections
        bridge.close()
        #expect(comebacks >= 5, "the bridge came back to the server it was given \(comebacks) times in 15 s")
        #expect(silent.connections <= 40)
    }
}
