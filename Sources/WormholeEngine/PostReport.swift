/// What one post did: how many listeners got the notification at once, how many will find it in their spool,
/// and what failed.

public struct PostReport: Sendable, Hashable, CustomStringConvertible {
    /// One listener the notification could not reach.
    public struct Failure: Sendable, Hashable, CustomStringConvertible {
        /// The listening process's id.
        public var pid: Int32
        /// Why it could not be reached, for example ``WormholeError/Code/spoolFull``.
        public var error: WormholeError

        /// The process id and the error, e.g. `pid 42: spool full: …`.
        public var description: String { "pid \(pid): \(error)" }
    }

    /// Listeners whose socket now holds the notification, and observers in this process.
    public var delivered = 0
    /// Listeners that could not take it now (stopped, busy, or a large payload) and will read it from their spool.
    public var spooled = 0
    /// Dead listeners found on the way and removed from the registry; not an error.
    public var removedDeadListeners = 0
    /// Listeners that will not get it.
    public var failures: [Failure] = []

    /// An empty report: nothing delivered, spooled or failed.
    public init() {}

    /// A one-line summary, e.g. `delivered 2, spooled 1`, followed by removed listeners and failures if any.
    public var description: String {
        var text = "delivered \(delivered), spooled \(spooled)"
        if removedDeadListeners > 0 { text += ", removed \(removedDeadListeners) dead listener(s)" }
        if !failures.isEmpty { text += ", failed \(failures.count): " + failures.map(\.description).joined(separator: "; ") }
        return text
    }
}
