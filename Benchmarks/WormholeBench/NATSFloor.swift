// The floors of the bridge rows: what the NATS server itself costs through the NATS client code the bridge uses
// (`NATSConnection`, `JetStream` of WormholeBridge), in this process, on two connections, each with its reading
// thread as a bridge's connection has.
//
// - NATS core: a message published on one connection, answered by a subscriber on the other, on another
//   subject; and a one-way burst, counted by the subscriber. No store, no acknowledgement.
// - JetStream: what the bridge does per message. Each ping is published into a stream and waits for the
//   server's PubAck; the other side's durable consumer (the bridge's settings: explicit acknowledgement, one
//   message at a time) hands it over in answer to a pull, it is acknowledged, and the pong goes back the same
//   way. The burst: a publisher waiting for each PubAck, one at a time, as the bridge publishes, and a consumer
//   pulling and acknowledging one at a time, counted there.
//
// The messages carry `payload` bytes and, into the stream, the two headers a bridge's carry (its host, and a
// `Nats-Msg-Id` the server checks against its duplicate window).
import Foundation
import Synchronization
import WormholeBridge

final class NATSFloor: Sendable {
    private let one: NATSConnection
    private let two: NATSConnection
    private let payload: [UInt8]
    private let loop = RoundTripLoop()
    private let bursts = BurstCounter()
    private let messageID = Atomic<UInt64>(0)
    private let host = String(UInt64.random(in: 1...UInt64.max), radix: 16)

    /// How long a request, a connection or a pull's answer may take.
    static let timeout: Duration = .seconds(5)
    /// How long a pull waits at the server for a message (the bridge's own wait).
    static let pullExpiry: Duration = .seconds(2)
    /// The stream and consumers of the JetStream floor, apart from the bridge's (`WORMHOLE_WORMHOLE`, `wormhole.n.>`).
    static let stream = "BENCH_FLOOR"

    /// Connects twice to `server`, and subscribes the core floor's answerer and counters.
    init(server: NATSServerAddress, payloadSize: Int) throws {
        one = try NATSConnection.open(server, name: "wormhole-bench-floor-1", timeout: Self.timeout)
        two = try NATSConnection.open(server, name: "wormhole-bench-floor-2", timeout: Self.timeout)
        payload = [UInt8](repeating: 0x2A, count: payloadSize)
        let (one, two, payload, loop) = (one, two, payload, loop)
        _ = try two.subscribe("bench-floor.ping") { _ in try? two.publish("bench-floor.pong", payload: payload) }
        _ = try one.subscribe("bench-floor.pong") { _ in
            if loop.arrived() { try? one.publish("bench-floor.ping", payload: payload) }
        }
        let bursts = bursts
        _ = try two.subscribe("bench-floor.burst") { _ in bursts.add() }
        // Both subscriptions in place at the server before anything is published.
        try one.roundTrip(timeout: Self.timeout)
        try two.roundTrip(timeout: Self.timeout)
    }

    func close() {
        one.close(BridgeError("the benchmark is done"))
        two.close(BridgeError("the benchmark is done"))
    }

    // MARK: NATS core

    /// `rounds` round trips on NATS core; nil when one did not come back in time.
    func corePingPong(rounds: Int) throws -> [UInt64]? {
        try loop.run(rounds: rounds, seconds: 30 + Double(rounds) / 100) {
            try one.publish("bench-floor.ping", payload: payload)
        }
    }

    /// `count` messages published at once on NATS core, a second, counted as they reach the subscriber; nil when
    /// they did not all arrive in time.
    func coreBurst(count: Int) throws -> Double? {
        bursts.expect(count)
        let start = monotonicNanoseconds()
        for _ in 0..<count { try one.publish("bench-floor.burst", payload: payload) }
        guard bursts.wait(seconds: 60) else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    // MARK: JetStream

    /// Makes the floor's stream (as the bridge makes its own: file storage, limits retention) and a durable
    /// consumer for each of its subjects, with the bridge's consumer settings.
    func prepareJetStream() throws {
        let stream = JetStream(connection: one, timeout: Self.timeout)
        try stream.ensureStream(
            StreamConfig(
                name: Self.stream, subjects: ["bench-floor.js.>"], numReplicas: 1,
                maxAge: Int64(Duration.seconds(3600) / .nanoseconds(1)), duplicateWindow: Int64(Duration.seconds(120) / .nanoseconds(1))))
        for name in ["ping", "pong", "burst"] {
            try stream.ensureConsumer(
                stream: Self.stream,
                ConsumerConfig(durableName: "bench-" + name, ackWait: Int64(Duration.seconds(3) / .nanoseconds(1)), filterSubject: "bench-floor.js." + name))
        }
    }

    /// Publishes one message into the stream, and waits for its PubAck.
    private func publish(_ name: String, on stream: JetStream) throws {
        var headers = NATSHeaders()
        let id = messageID.add(1, ordering: .relaxed).newValue
        try headers.set("Wormhole-Host", host)
        try headers.set("Nats-Msg-Id", "\(host)-\(id)")
        _ = try stream.publish("bench-floor.js." + name, headers: headers, payload: payload, stream: Self.stream)
    }

    /// The next message of the consumer `name`, pulled (again after each pull that expired empty), then
    /// acknowledged.
    /// - Throws: ``BenchError`` when `giveUp` says so after a pull came back empty.
    private func take(_ name: String, from stream: JetStream, _ mailbox: Mailbox, giveUp: () -> Bool) throws {
        while true {
            guard let message = try stream.next(stream: Self.stream, consumer: "bench-" + name, expiry: Self.pullExpiry, into: mailbox)
            else {
                if giveUp() { throw BenchError("no message for the consumer bench-\(name) in time") }
                continue
            }
            try stream.acknowledge(message)
            return
        }
    }

    /// `rounds` round trips through the stream: this thread publishes each ping (PubAck awaited) and then pulls
    /// and acknowledges its pong; an answering thread on the other connection pulls and acknowledges each ping
    /// and publishes the pong (PubAck awaited). Ends the answering thread before it returns.
    func jetStreamPingPong(rounds: Int) throws -> [UInt64] {
        let here = JetStream(connection: one, timeout: Self.timeout)
        let there = JetStream(connection: two, timeout: Self.timeout)
        let (ours, theirs) = (try one.mailbox(), try two.mailbox())
        let stop = StopFlag()
        let answered = DispatchSemaphore(value: 0)
        let answerer = Thread { [self] in
            defer { answered.signal() }
            do {
                for _ in 0..<rounds {
                    try take("ping", from: there, theirs) { stop.isSet }
                    try publish("pong", on: there)
                }
            } catch {
                if !stop.isSet { print("JetStream floor: the answering side failed: \(error)") }
            }
        }
        answerer.start()
        defer {
            stop.set()
            answered.wait()
        }
        let deadline = monotonicNanoseconds() + UInt64(30 + rounds / 100) * 1_000_000_000
        var samples: [UInt64] = []
        samples.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            try publish("ping", on: here)
            try take("pong", from: here, ours) { monotonicNanoseconds() > deadline }
            samples.append(monotonicNanoseconds() - start)
        }
        return samples
    }

    /// `count` messages into the stream, a second: published one at a time, each PubAck awaited, on one
    /// connection, while this thread pulls and acknowledges them one at a time on the other, until all arrived.
    func jetStreamBurst(count: Int) throws -> Double {
        let publisher = JetStream(connection: one, timeout: Self.timeout)
        let consumer = JetStream(connection: two, timeout: Self.timeout)
        let mailbox = try two.mailbox()
        let published = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let start = monotonicNanoseconds()
        let sender = Thread { [self] in
            defer { published.signal() }
            do {
                for _ in 0..<count { try publish("burst", on: publisher) }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        sender.start()
        defer { published.wait() }
        let deadline = start + 60 * 1_000_000_000
        for _ in 0..<count {
            try take("burst", from: consumer, mailbox) { monotonicNanoseconds() > deadline || failure.withLock { $0 != nil } }
        }
        let rate = Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
        if let error = failure.withLock({ $0 }) { throw error }
        return rate
    }
}

/// Set once, to end a thread's loop.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}

/// Counts a burst's messages as they arrive, and wakes the waiting thread at the last.
private final class BurstCounter: Sendable {
    private let state = Mutex<(count: Int, target: Int)>((0, Int.max))
    private let done = DispatchSemaphore(value: 0)

    /// Starts counting a burst of `target`.
    func expect(_ target: Int) { state.withLock { $0 = (0, target) } }

    func add() {
        let last = state.withLock { state in
            state.count += 1
            return state.count == state.target
        }
        if last { done.signal() }
    }

    /// Whether all arrived within `seconds`.
    func wait(seconds: Double) -> Bool { done.wait(timeout: .now() + seconds) == .success }
}
