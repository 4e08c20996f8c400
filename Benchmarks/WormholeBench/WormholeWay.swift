// Wormhole itself, through its public API only, on one transport: the benchmark's own center names it in its
// Configuration, and the processes it starts get it through WORMHOLE_TRANSPORT.
import Foundation
import Synchronization
import Wormhole

final class WormholeWay: Mechanism {
    let name = "Wormhole"
    let socketType: Transport
    var label: String { "Wormhole (\(socketType))" }
    var transport: Transport? { socketType }
    let slowness = 1
    let center: GroupNotificationCenter
    private let peer: Process
    private let pongs = Arrivals(), stamps = Arrivals(), floods = Arrivals()
    private var totals = (pongs: 0, stamps: 0, floods: 0)
    private let pongLoop = PingLoop.Slot()
    /// What the pong's observer signals while ``waitingPingPong(_:rounds:)`` runs.
    private let waiting = WaiterSlot()

    init(container: String, transport: Transport) throws {
        socketType = transport
        center = try Self.center(container: container, transport: transport)
        let ready = Arrivals()
        let (pongs, stamps, floods) = (pongs, stamps, floods)
        let pongLoop = pongLoop
        let waiting = waiting
        center.addObserver(forName: .init("pong"), object: nil, queue: nil) { _ in
            if let answered = waiting.current {
                answered.signal()
                return
            }
            if pongLoop.current?.next() == true { pongs.add() }
        }
        center.addObserver(forName: .init("stamped"), object: nil, queue: nil) { stamps.add($0.userInfo) }
        center.addObserver(forName: .init("flooded"), object: nil, queue: nil) { _ in floods.add() }
        center.addObserver(forName: .init("ready"), object: nil, queue: nil) { _ in ready.add() }
        peer = try spawnSelf(["wormhole-peer", "--container", container], transport: transport)
        guard ready.wait(until: 1, seconds: 30) != nil else { throw BenchError("the Wormhole peer did not start") }
    }

    deinit { stopProcess(peer) }

    /// A center on `container` that listens on `transport`.
    static func center(container: String, transport: Transport) throws -> GroupNotificationCenter {
        try GroupNotificationCenter(
            containerURL: URL(fileURLWithPath: container), clientIdentifier: nil, configuration: .init(transport: transport))
    }

    /// Each ping is posted from the observer of the pong before it, as the raw socket's next send follows its
    /// receive on one thread: no hop to the waiting main thread inside the loop.
    func pingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        let loop = PingLoop(rounds: rounds, center: center, payload: payload)
        pongLoop.current = loop
        loop.next()
        totals.pongs += 1
        _ = pongs.wait(until: totals.pongs, seconds: 10 + Double(rounds) / 100)
        pongLoop.current = nil
        return loop.samples
    }

    /// One-way latencies as an app that waits for an answer sees them: this thread posts the ping and waits on a
    /// semaphore that the pong's observer signals, on the receive thread. Fewer than `rounds` if a pong did not
    /// come within 10 s.
    func waitingPingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        let answered = DispatchSemaphore(value: 0)
        waiting.current = answered
        defer { waiting.current = nil }
        var samples: [UInt64] = []
        samples.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            center.post(name: .init("ping"), object: nil, userInfo: payload.userInfo)
            guard answered.wait(timeout: .now() + 10) == .success else { break }
            samples.append((monotonicNanoseconds() - start) / 2)
        }
        return samples
    }

    func stamped(_ payload: Payload, count: Int, interval: UInt64) -> Percentiles? {
        paced(count, every: interval) {
            center.post(name: .init("stamp"), object: "\(count) \(monotonicNanoseconds())", userInfo: payload.userInfo)
        }
        totals.stamps += 1
        guard let numbers = stamps.wait(until: totals.stamps, seconds: 120) else { return nil }
        return Percentiles(peer: numbers, count: count)
    }

    func flood(_ payload: Payload, count: Int) -> Double? {
        let start = monotonicNanoseconds()
        for _ in 0..<count { center.post(name: .init("flood"), object: String(count), userInfo: payload.userInfo) }
        totals.floods += 1
        guard awaitFlood(seconds: 300) else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    var peerIdentifier: Int32 { peer.processIdentifier }

    /// Posts a flood of `count` with no userInfo and returns what each post cost, in nanoseconds; the peer's
    /// answer is left for ``awaitFlood(seconds:)``.
    func timedPosts(_ count: Int) -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = monotonicNanoseconds()
            center.post(name: .init("flood"), object: String(count), userInfo: nil)
            samples.append(monotonicNanoseconds() - start)
        }
        totals.floods += 1
        return samples
    }

    /// What each of `count` posts with no userInfo cost, in nanoseconds, posted in chunks that the peer
    /// confirms before the next: the socket never fills, so no post is spooled. A chunk is 100 posts, or on
    /// datagrams fewer than the socket's queue takes (``datagramChunk``).
    func chunkedPostCosts(_ count: Int) -> [UInt64] {
        let chunk = socketType == .datagram ? Self.datagramChunk : 100
        var samples: [UInt64] = []
        for _ in 0..<(count / chunk) {
            samples += timedPosts(chunk)
            guard awaitFlood(seconds: 30) else { break }
        }
        return samples
    }

    /// Two fewer posts than a datagram socket queues, so that a chunk of posts fits the queue whole.
    static let datagramChunk = min(100, max(1, datagramQueueLength - 2))

    /// Waits until the peer has had every flood so far.
    func awaitFlood(seconds: Double) -> Bool {
        floods.wait(until: totals.floods, seconds: seconds) != nil
    }

    // MARK: The other side

    /// The echo peer: answers pings, collects stamps, counts floods. Its center listens on the transport
    /// WORMHOLE_TRANSPORT names, which the benchmark sets.
    static func peer(container: String) throws -> Never {
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        center.addObserver(forName: .init("ping"), object: nil, queue: nil) { note in
            center.post(name: .init("pong"), object: nil, userInfo: note.userInfo)
        }
        let collector = Mutex(StampCollector())
        center.addObserver(forName: .init("stamp"), object: nil, queue: nil) { note in
            let fields = (note.object as? String)?.split(separator: " ").compactMap { UInt64($0) } ?? []
            guard fields.count == 2 else { return }
            if let result = collector.withLock({ $0.add(stamp: fields[1], total: Int(fields[0])) }) {
                center.post(name: .init("stamped"), object: nil, userInfo: result.peerNumbers)
            }
        }
        serve(counting: "flood", answering: "flooded", on: center)
    }

    /// A fan-out sink: counts "fan" notifications and answers "fanned" with its peak memory.
    static func sink(container: String) throws -> Never {
        serve(counting: "fan", answering: "fanned", on: try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container)))
    }

    /// Counts `name` notifications, posts `answer` each time it has as many as their object says, announces
    /// itself ready, and serves until killed.
    private static func serve(counting name: String, answering answer: String, on center: GroupNotificationCenter) -> Never {
        let received = Mutex(0)
        center.addObserver(forName: .init(name), object: nil, queue: nil) { note in
            let total = (note.object as? String).flatMap(Int.init) ?? 0
            let done = received.withLock { count in
                count += 1
                if count == total { count = 0; return true }
                return false
            }
            if done { center.post(name: .init(answer), object: nil, userInfo: ["rss": peakResidentKiB()]) }
        }
        center.post(name: .init("ready"), object: nil)
        while true { sleep(1000) }
    }

    /// In a fan-out child: starts eight sinks on `transport` in a container of its own and floods them.
    static func fanOut(_ payload: Payload, count: Int, folder: String, transport: Transport) throws -> FanOutResult? {
        let center = try Self.center(container: folder, transport: transport)
        let ready = Arrivals(), fanned = Arrivals()
        let largest = Mutex(0)
        center.addObserver(forName: .init("ready"), object: nil, queue: nil) { _ in ready.add() }
        center.addObserver(forName: .init("fanned"), object: nil, queue: nil) { note in
            let rss = note.userInfo?["rss"] as? Int ?? 0
            largest.withLock { $0 = max($0, rss) }
            fanned.add()
        }
        let sinks = try (0..<8).map { _ in try spawnSelf(["wormhole-sink", "--container", folder], transport: transport) }
        defer { sinks.forEach(stopProcess) }
        guard ready.wait(until: 8, seconds: 60) != nil else { return nil }
        let start = monotonicNanoseconds()
        for _ in 0..<count { center.post(name: .init("fan"), object: String(count), userInfo: payload.userInfo) }
        guard fanned.wait(until: 8, seconds: 300) != nil else { return nil }
        let rate = Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
        return FanOutResult(rate: rate, posterKiB: peakResidentKiB(), sinkKiB: largest.withLock { $0 })
    }
}

/// A ping-pong in progress: times each round trip and posts the next ping, on the thread that got the pong.
final class PingLoop: @unchecked Sendable {  // Unchecked because: only one thread at a time runs `next`.
    /// Where the pong observer finds the loop in progress.
    final class Slot: Sendable {
        private let loop = Mutex<PingLoop?>(nil)
        var current: PingLoop? {
            get { loop.withLock { $0 } }
            set { loop.withLock { $0 = newValue } }
        }
    }

    private let rounds: Int
    private let center: GroupNotificationCenter
    private let payload: Payload
    /// Read and written by one thread at a time (the one that runs `next`, then the one that reads the samples
    /// once the rounds are done): no run-time exclusivity checks, which would count in the instructions a
    /// notification is measured to cost.
    @exclusivity(unchecked) private var start: UInt64 = 0
    @exclusivity(unchecked) private(set) var samples: [UInt64] = []

    init(rounds: Int, center: GroupNotificationCenter, payload: Payload) {
        (self.rounds, self.center, self.payload) = (rounds, center, payload)
        samples.reserveCapacity(rounds)
    }

    /// Records the round trip that just ended, if any, and posts the next ping; true when all are done.
    @discardableResult
    func next() -> Bool {
        let now = monotonicNanoseconds()
        if start != 0 { samples.append((now - start) / 2) }
        guard samples.count < rounds else { return true }
        start = monotonicNanoseconds()
        center.post(name: .init("ping"), object: nil, userInfo: payload.userInfo)
        return false
    }
}

/// Where the pong's observer finds the poster waiting for it.
final class WaiterSlot: Sendable {
    private let semaphore = Mutex<DispatchSemaphore?>(nil)
    var current: DispatchSemaphore? {
        get { semaphore.withLock { $0 } }
        set { semaphore.withLock { $0 = newValue } }
    }
}

extension Percentiles {
    /// As a userInfo of whole nanoseconds, for the Wormhole peer to post back.
    var peerNumbers: [String: Int] {
        ["p50": Int(p50 * 1000), "p99": Int(p99 * 1000), "p999": Int(p999 * 1000)]
    }

    init?(peer numbers: [String: Int], count: Int) {
        guard let p50 = numbers["p50"], let p99 = numbers["p99"], let p999 = numbers["p999"] else { return nil }
        (self.p50, self.p99, self.p999, self.count) = (Double(p50) / 1000, Double(p99) / 1000, Double(p999) / 1000, count)
    }
}

/// A benchmark that cannot go on, with what went wrong.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
