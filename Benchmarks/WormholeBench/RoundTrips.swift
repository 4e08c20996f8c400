// Round trips of the bridge rows: timed one at a time, each ping sent when the pong before it arrives, and
// summed up as p50, p90 and p99 (the main table's Percentiles are one-way: p50, p99, p99.9).
import Dispatch
import Foundation
import Synchronization

/// p50, p90 and p99 of round trips, in microseconds.
struct RoundTrips {
    var p50: Double
    var p90: Double
    var p99: Double
    var count: Int

    init?(nanoseconds samples: [UInt64]) {
        guard let values = Percentiles.microseconds(samples, at: [0.5, 0.9, 0.99]) else { return nil }
        (p50, p90, p99, count) = (values[0], values[1], values[2], samples.count)
    }
}

/// One run of round trips at a time, driven from where the pongs arrive: `arrived()` times the round trip that
/// ended and says whether to send the next ping, so that the loop needs no hop to the waiting thread.
final class RoundTripLoop: Sendable {
    private let state = Mutex<(remaining: Int, stamp: UInt64, samples: [UInt64])>((0, 0, []))
    private let finished = DispatchSemaphore(value: 0)

    /// Runs `rounds` round trips, the first begun by `send` here, the others by the pong's handler; the time of
    /// each, or nil when a pong did not come within `seconds` of the start.
    func run(rounds: Int, seconds: Double, send: () throws -> Void) rethrows -> [UInt64]? {
        guard rounds > 0 else { return [] }
        state.withLock { $0 = (rounds, monotonicNanoseconds(), []) }
        try send()
        if finished.wait(timeout: .now() + seconds) == .success { return state.withLock { $0.samples } }
        // Too late: a pong still on its way is not counted, and one that ended the run just now is taken.
        let done = state.withLock { state -> Bool in
            defer { state.remaining = 0 }
            return state.remaining == 0
        }
        if done {
            finished.wait()
            return state.withLock { $0.samples }
        }
        return nil
    }

    /// A pong arrived: its round trip is timed; true when the handler is to send the next ping, now.
    func arrived() -> Bool {
        let next = state.withLock { state -> Bool? in
            guard state.remaining > 0 else { return false }
            let now = monotonicNanoseconds()
            state.samples.append(now - state.stamp)
            state.remaining -= 1
            guard state.remaining > 0 else { return nil }
            state.stamp = monotonicNanoseconds()
            return true
        }
        guard let next else {
            finished.signal()
            return false
        }
        return next
    }
}
