/// Where a listener's receive thread hands what it reads and says what happened: the one way up from the
/// transport to the center (``Reception``). Every call comes on the listener's receive thread.

protocol ListenerSink: AnyObject, Sendable {
    /// Frames `listener` read, in the order each poster posted them, to hand to observers. What the receive
    /// thread is to run of them at once (the observers that run on it, and what was to follow them) goes through
    /// `runningObserverCode`, as observers' code (which a stop does not wait for).
    func received(_ frames: [Frame], by listener: Listener, runningObserverCode: (() -> Void) -> Void)
    /// As ``received(_:by:runningObserverCode:)``, for frames a durable listener's spool hands over: returns those
    /// that no observer matched as they were handed (one removed since ``holdsBack(_:)`` was asked), which the
    /// spool then keeps for later rather than lose. What observers take to run later counts in `acknowledgement`.
    func receivedFromSpool(
        _ frames: [Frame], by listener: Listener, acknowledging acknowledgement: SpoolAcknowledgement?,
        runningObserverCode: (() -> Void) -> Void
    ) -> [Frame]
    /// Whether a durable listener keeps `frame` in its spool for later: nothing in this process observes it yet.
    func holdsBack(_ frame: Frame) -> Bool
    /// A count that changes whenever an observer is removed.
    var observersRemoved: UInt64 { get }
    /// Messages or frames dropped, and why: counted and logged.
    func dropped(_ count: Int, _ reason: String)
    /// What the listener did, or could not do, that loses nothing: logged.
    func warn(_ message: String)
    /// A failure of the receive path itself (``WormholeStatistics/receiveErrors``): counted, and logged when
    /// `says` (a failure that repeats is said at most once a second).
    func receiveFailed(_ reason: String, says: Bool)
    /// Once a second (also while the listener reads nothing, its observers holding too much).
    func keepHouse(for listener: Listener)
}

/// A listener's sink, held weakly (the sink owns the listener): once it is gone, as when a center went away
/// while its receive thread finishes, what the listener reads goes nowhere, a durable listener keeps its spool
/// for its identity's next run, and what it says is still logged.
final class SinkReference: @unchecked Sendable {
    // Safe because it is written only in init; a weak reference is read atomically.
    private weak var sink: (any ListenerSink)?

    init(_ sink: any ListenerSink) {
        self.sink = sink
    }

    func received(_ frames: [Frame], by listener: Listener, runningObserverCode: (() -> Void) -> Void) {
        sink?.received(frames, by: listener, runningObserverCode: runningObserverCode)
    }

    func receivedFromSpool(
        _ frames: [Frame], by listener: Listener, acknowledging acknowledgement: SpoolAcknowledgement?,
        runningObserverCode: (() -> Void) -> Void
    ) -> [Frame] {
        // Nothing observes once the sink went: a durable listener keeps them all.
        sink?.receivedFromSpool(frames, by: listener, acknowledging: acknowledgement, runningObserverCode: runningObserverCode)
            ?? frames
    }

    func holdsBack(_ frame: Frame) -> Bool { sink?.holdsBack(frame) ?? true }

    var observersRemoved: UInt64 { sink?.observersRemoved ?? .max }

    func dropped(_ count: Int, _ reason: String) {
        if let sink { sink.dropped(count, reason) } else { Log.warning(reason) }
    }

    func warn(_ message: String) {
        if let sink { sink.warn(message) } else { Log.warning(message) }
    }

    func receiveFailed(_ reason: String, says: Bool) {
        if let sink { sink.receiveFailed(reason, says: says) } else if says { Log.warning(reason) }
    }

    func keepHouse(for listener: Listener) { sink?.keepHouse(for: listener) }
}
