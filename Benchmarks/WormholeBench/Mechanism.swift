import Wormhole

typealias Transport = GroupNotificationCenter.Transport

/// A way to carry a notification from one process to another, measured the same way for each.
///
/// The main process holds one of each, connected to an echo peer of its own kind; fan-out runs in a child
/// process (`FanOut`), so that its poster's peak memory is its own. The raw socket and Wormhole are held once
/// for each transport.
protocol Mechanism: AnyObject {
    /// What the JSON report calls it, the same from run to run ("Wormhole" for both of its transports).
    var name: String { get }
    /// What the tables and the chart call it: with the transport, where it has one.
    var label: String { get }
    /// The kind of socket it runs on: the raw socket's type, Wormhole's transport; nil for the others.
    var transport: Transport? { get }
    /// How many times slower than a socket it is, to keep the run short.
    var slowness: Int { get }
    /// One-way latencies in nanoseconds, each half the round trip of a ping answered by a pong with the same
    /// payload; fewer than `rounds` if a pong did not come within 10 s.
    func pingPong(_ payload: Payload, rounds: Int) -> [UInt64]
    /// One-way latencies measured by the receiver: each message carries the monotonic time it was sent at,
    /// one every `interval` nanoseconds, and the peer sends back the percentiles once it has `count`.
    func stamped(_ payload: Payload, count: Int, interval: UInt64) -> Percentiles?
    /// Messages a second from this process to the peer, measured until the peer has the last of `count`.
    func flood(_ payload: Payload, count: Int) -> Double?
}

extension Mechanism {
    var label: String { name }
    var transport: Transport? { nil }
}

/// What a fan-out child measured: its rate, its own peak memory and the largest of its sinks'.
struct FanOutResult {
    var rate: Double
    var posterKiB: Int
    var sinkKiB: Int
}
