import Synchronization
import WormholeFormats
import WormholeSystem

/// The live counters behind ``WormholeStatistics``.
final class Counters: Sendable {
    private let values = Mutex(WormholeStatistics())

    func count(_ change: (inout WormholeStatistics) -> Void) {
        values.withLock { change(&$0) }
    }

    var snapshot: WormholeStatistics { values.withLock { $0 } }
}
