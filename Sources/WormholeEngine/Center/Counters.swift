import Synchronization

/// The live counters behind ``WormholeStatistics``.
package final class Counters: Sendable {
    private let values = Mutex(WormholeStatistics())

    package func count(_ change: (inout WormholeStatistics) -> Void) {
        values.withLock { change(&$0) }
    }

    package var snapshot: WormholeStatistics { values.withLock { $0 } }
}
