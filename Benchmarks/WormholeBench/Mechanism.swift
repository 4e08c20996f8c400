/// A way to carry a notification from one process to another, measured the same way for each.
///
/// The main process holds one of each, connected to an echo peer of its own kind; fan-out runs in a child
/// process (`FanOut`), so that its poster's peak memory is its own.
protocol Mechanism: AnyObject {
    var name: String { get }
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

/// What a fan-out child measured: its rate, its own peak memory and the largest of its sinks'.
struct FanOutResult {
    var rate: Double
    var posterKiB: Int
    var sinkKiB: Int
}
