/// What the receive loop is doing: reading its sockets, or held back by one thing, or stopping. Kept by
/// ``ReceiveSchedule`` from round to round, and moved by the events the loop reports as it learns them.
///
/// What holds the loop back comes from outside it, and each round reports what it finds, in this order: whether a
/// hand-over of the spool stopped (``Event/handOverStopped``, ``Event/handOverFinished``), whether the observers'
/// queues hold too much (``Event/backlogFilled``, ``Event/backlogHasRoom``), then, unless it hands over, whether
/// it waits for its observers (``Event/noObserverYet``, ``Event/observersAwaited(for:)``,
/// ``Event/observerWaitOver``: only a durable listener ever waits for them). After the round's reads it reports
/// the backlog again, and a wait for observers that may have ended. So a stopped hand-over goes before everything
/// else, a wait for observers before the backlog, and a backlog that fills during a round pauses it whatever it
/// waited for.
///
/// An event that does not apply to the mode (a wait for observers reported during a hand-over, anything after a
/// stop) is answered ``Answer/refused`` and changes nothing: the loop goes on as it was, and nothing traps.

enum ReceiveMode: Hashable, Sendable {
    /// Reads its sockets and looks at its spool.
    case reading
    /// The observers' queues hold too much of what was read: reads nothing until they work it down (they wake
    /// the thread), and posters fill the sockets, then the spool.
    case pausedForBacklog
    /// A durable listener whose first observer in this process is not added yet: reads nothing, so that what is
    /// sent to it waits for its observers in the socket and the spool.
    case awaitingFirstObserver
    /// A durable listener waits, `remaining` nanoseconds more, for the observers that start-up code adds one after
    /// another, before it hands its spool over: what is posted meanwhile stays behind the spool's backlog.
    case awaitingObservers(remaining: UInt64)
    /// A hand-over of the spool stopped because the observers held too much: nothing is read, polled or bound
    /// until it is done. It goes on in a round when the observers have room (`resumes`).
    case handingOver(resumes: Bool)
    /// The thread is to stop: the loop ends.
    case stopping

    /// What the loop learns, at the start of a round or after its reads.
    enum Event: Hashable, Sendable {
        /// A hand-over of the spool stopped for the observers, and waits to go on.
        case handOverStopped
        /// No hand-over of the spool waits to go on.
        case handOverFinished
        /// The observers' queues hold too much.
        case backlogFilled
        /// The observers' queues have room.
        case backlogHasRoom
        /// A durable listener's first observer is not added yet.
        case noObserverYet
        /// A durable listener waits for its observers, `remaining` nanoseconds more.
        case observersAwaited(for: UInt64)
        /// A durable listener does not wait for observers, or its wait just ended.
        case observerWaitOver
        /// The thread was asked to stop.
        case stopRequested
    }

    /// How the mode took an event.
    enum Answer: Equatable, Sendable {
        /// The mode changed.
        case moved
        /// The event applies, and the mode already says it.
        case unchanged
        /// The event does not apply to the mode: ignored.
        case refused
    }

    /// The event, for a durable listener, that a reading wait (``ReceiveThread/readingWait()``) says: `.max`
    /// while no observer was added, the rest of a wait for observers, nil when it reads.
    static func observerWait(_ wait: UInt64?) -> Event {
        switch wait {
        case nil: .observerWaitOver
        case .max?: .noObserverYet
        case let remaining?: .observersAwaited(for: remaining)
        }
    }

    /// Whether the loop reads its sockets and looks at its spool in this mode.
    var reads: Bool { self == .reading }

    /// Whether the loop waits for observers (``awaitingFirstObserver`` or ``awaitingObservers(remaining:)``).
    var awaitsObservers: Bool {
        switch self {
        case .awaitingFirstObserver, .awaitingObservers: true
        default: false
        }
    }

    /// Takes `event`: moves to the mode it leads to, and says how it took it.
    @discardableResult
    mutating func handle(_ event: Event) -> Answer {
        let next: ReceiveMode
        switch (self, event) {
        case (.stopping, .stopRequested):
            return .unchanged
        case (.stopping, _):
            return .refused
        case (_, .stopRequested):
            next = .stopping

        // A stopped hand-over goes before whatever else holds the loop back.
        case (.handingOver, .handOverStopped):
            return .unchanged
        case (_, .handOverStopped):
            next = .handingOver(resumes: false)
        case (.handingOver, .handOverFinished):
            next = .reading
        case (_, .handOverFinished):
            return .unchanged

        // The backlog: a hand-over goes on when it has room; a wait for observers ends in a pause when it fills.
        case (.handingOver, .backlogFilled):
            next = .handingOver(resumes: false)
        case (.handingOver, .backlogHasRoom):
            next = .handingOver(resumes: true)
        case (.pausedForBacklog, .backlogFilled):
            return .unchanged
        case (_, .backlogFilled):
            next = .pausedForBacklog
        case (.pausedForBacklog, .backlogHasRoom):
            next = .reading
        case (_, .backlogHasRoom):
            return .unchanged

        // A wait for observers: never asked for during a hand-over, which goes on first.
        case (.handingOver, .noObserverYet), (.handingOver, .observersAwaited), (.handingOver, .observerWaitOver):
            return .refused
        case (_, .noObserverYet):
            next = .awaitingFirstObserver
        case (_, .observersAwaited(let remaining)):
            next = .awaitingObservers(remaining: remaining)
        case (.awaitingFirstObserver, .observerWaitOver), (.awaitingObservers, .observerWaitOver):
            next = .reading
        case (_, .observerWaitOver):
            return .unchanged
        }
        guard next != self else { return .unchanged }
        self = next
        return .moved
    }
}
