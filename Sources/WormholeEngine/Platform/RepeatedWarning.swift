import Synchronization

/// A warning said at most once a second, however often it happens.
package final class RepeatedWarning: Sendable {
    private let lastSaid = Atomic<UInt64>(0)

    package init() {}

    /// Whether the warning is to be said now: true at most once a second, to one caller.
    package func isDue() -> Bool {
        let now = Sys.uptimeNanoseconds
        let last = lastSaid.load(ordering: .relaxed)
        return (last == 0 || now &- last >= Limits.repeatedWarningInterval.nanoseconds)
            && lastSaid.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
    }
}
