import Synchronization
import Wormhole

/// What ``GroupStorage`` could not do in this process because a container could not be opened: each such
/// container shows its values' defaults and keeps what is set from being written, so that a view never fails.
///
/// A container is tried once per process, on the first use of one of its values; the error is logged once
/// (through ``Wormhole/GroupNotificationCenter/setWarningHandler(_:)``'s handler, like Wormhole's other warnings)
/// and counted here. Failures of a container that opened (a value of another type stored under the name, a write
/// the container refused) are counted in that container's center's `statistics` instead, as for any `GroupValue`.
public struct GroupStorageStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Containers that could not be opened, by why: the code of the error that refused each one.
    public var unavailableContainers: [WormholeError.Code: Int] = [:]
    /// Reads of a value whose container could not be opened: each showed the value's default.
    public var defaultsShown = 0
    /// Values set while their container could not be opened: nothing was written.
    public var writesDropped = 0

    /// Statistics with every count at zero.
    public init() {}

    /// What this process has counted so far.
    public static var current: GroupStorageStatistics {
        SharedGroupValues.counts.withLock { $0 }
    }

    /// Every count, named, on one line.
    public var description: String {
        let reasons = unavailableContainers.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")
        return "unavailable containers [\(reasons)], defaults shown \(defaultsShown), writes dropped \(writesDropped)"
    }
}
