import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// The names that have a retained notification in the container, sorted by their UTF-8 bytes: each one
    /// ``retainedNotification(named:allowedClasses:)`` would read at the time of the listing.
    ///
    /// Each file is read and checked, as a read of its value checks it; a name too long for a file name, stored
    /// under a hash, lists as the name its notification carries. What is not a whole retained notification (a
    /// file of a name Wormhole never writes, a FIFO, a symbolic link, a folder, a file over the largest frame's
    /// size, a damaged one) is skipped, counted in ``WormholeStatistics/dropped`` and logged, and left where it is.
    /// At most the first 100,000 entries of the folder are looked at. A value posted or cleared during the listing
    /// may be listed or not.
    /// - Returns: The names, including a ``WormholeMailbox``'s (`wormhole.message.<identifier>`).
    /// - Throws: A system error when the container's `retained/` folder cannot be listed. A skipped file is not an
    ///   error.
    public func retainedNotificationNames() throws -> [Notification.Name] {
        try reporting(endpoint.retained.names(), in: "retained").map { Notification.Name($0) }
    }

    /// The names of the ``GroupValue``s that hold a value in the container, sorted by their UTF-8 bytes: each one
    /// that a `GroupValue` of the name and of the right type would read as something other than its default.
    ///
    /// A value that was never set, or was reset (``GroupValue/reset()``), is not listed. Each value's versions are
    /// read as a `GroupValue` reads them; a name too long for a folder name, stored under a hash, lists as the name
    /// its versions carry. What is not a value's folder (a name Wormhole never makes, a symbolic link, a file,
    /// a folder with no whole version near its newest) is skipped, counted in ``WormholeStatistics/dropped`` and
    /// logged, and left where it is. At most the first 100,000 entries of the folder are looked at.
    /// - Returns: The value names, as given to ``GroupValue/init(_:default:in:queue:tracksChanges:)``.
    /// - Throws: A system error when the container's `values/` folder cannot be listed. A skipped folder is not
    ///   an error.
    public func groupValueNames() throws -> [String] {
        try reporting(ValueStore.names(in: endpoint.container), in: "values")
    }

    /// What ``retainedNotificationNames()`` lists, with each entry of `retained/` it skipped and why, for a caller
    /// that says them itself (the `wormhole` tool): counted in ``WormholeStatistics/dropped``, not logged.
    package func retainedNotificationListing() throws -> (names: [String], skipped: [(entry: String, reason: String)]) {
        let found = try endpoint.retained.names()
        endpoint.counters.count { $0.dropped += found.skipped.count }
        return (found.names, found.skipped)
    }

    /// What ``groupValueNames()`` lists, with each entry of `values/` it skipped and why (a damaged value among
    /// them), for a caller that says them itself (the `wormhole` tool): counted in
    /// ``WormholeStatistics/dropped``, not logged.
    package func groupValueListing() throws -> (names: [String], skipped: [(entry: String, reason: String)]) {
        let found = try ValueStore.names(in: endpoint.container)
        endpoint.counters.count { $0.dropped += found.skipped.count }
        return (found.names, found.skipped)
    }

    /// The names a listing found; what it skipped is counted, and said in one warning.
    private func reporting(_ found: StoredNames, in folder: String) -> [String] {
        if let first = found.skipped.first {
            endpoint.counters.count { $0.dropped += found.skipped.count }
            let more = found.skipped.count > 1 ? " (and \(found.skipped.count - 1) more)" : ""
            Log.warning("\(folder)/\(first.entry) in \(containerURL.path) skipped: \(first.reason)\(more)")
        }
        return found.names
    }
}
