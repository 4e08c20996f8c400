/// Where a listener's receive thread hands what it reads and says what happened: the one way up from the
/// transport to the center (``Reception``). Every call comes on the listener's receive thread.
protocol ListenerSink: AnyObject, Sendable {
    /// Frames `listener` read, in the order each poster posted them, to hand to observers.
    func received(_ frames: [Frame], by listener: Listener)
    /// Whether a durable listener keeps `frame` in its spool for later: nothing in this process observes it yet.
    func holdsBack(_ frame: Frame) -> Bool
    /// Messages or frames dropped, and why: counted and logged.
    func dropped(_ count: Int, _ reason: String)
    /// What the listener did, or could not do, that loses nothing: logged.
    func warn(_ message: String)
    /// A failure of the receive path itself (``WormholeStatistics/receiveErrors``): counted, and logged when
    /// `says` (a failure that repeats is said at most once a second).
    func receiveFailed(_ reason: String, says: Bool)
    /// Once a second, and whenever the listener's socket file was bound again.
    func keepHouse(for listener: Listener)
}
