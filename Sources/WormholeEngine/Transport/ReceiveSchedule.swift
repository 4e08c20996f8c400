/// What the receive loop is doing, and what is due when: the decisions of ``Listener/run()`` as a value, apart
/// from its sockets and files, so that each can be read and tested on its own.
///
/// A round of the loop (`Listener.round`, one function for each step):
/// 1. **Takes stock** (``takeStock(handingOver:backlogOver:durable:observerWait:)``) of what holds the loop
///    back, which moves its ``mode`` (a ``ReceiveMode``): a hand-over of the spool that stopped, a backlog of the
///    observers that holds too much, a durable listener's wait for its observers. Otherwise it reads.
/// 2. **Waits** (`Listener.wait`, ``timeout(inboxTimeout:)``) on the wake pipe, and on the sockets only while it
///    reads. A failed wait is said at most once a second (``waitFailed(at:)``).
/// 3. **Reads** what the sockets hold and hands it over (`Listener.read`), then looks at the time
///    (``begin(at:ready:timeout:)``): housekeeping is due once a second.
/// 4. While **paused** (`Listener.staysPaused`, ``pausesAfterReads(backlogOver:observerWait:)``), the spool
///    waits too (``paused()``): a look at the bell is owed for when the pause ends. A hand-over of the spool that
///    stopped because the observers held too much is a pause of its own: the round goes on with it when they have
///    room (the wait is then 0), and otherwise only keeps the registry entry when housekeeping is due.
/// 5. Otherwise it **looks at the bell** (`Listener.lookAtSpool`) when something suggests a poster spooled
///    (``looksAtBell(_:)``), and **drains** the spool when the bell rang or something else asks for it
///    (``drains(bell:_:)``, ``drained(readMessages:stillWaiting:suggestsSpooling:)``).
/// 6. **Rebinds** a socket that failed, at most once a second (`Listener.rebindFailedSocket`,
///    ``rebindsFailedSocket()``), and **keeps house** when due, which may rebind a socket file that was removed
///    (``rebound()``).
///
/// The bell costs a read of a file, so it is looked at only when a round suggests a poster spooled, and
/// otherwise at most ``Limits/bellLook`` after a wake-up that did not look: a poster whose socket was full could
/// not nudge.

struct ReceiveSchedule {
    /// What a round found, for the decisions that follow its reads.
    struct Round {
        /// The time after the reads, in uptime nanoseconds.
        var now: UInt64
        /// How many descriptors the wait found ready, the wake pipe included: 0 when it ran out.
        var ready: Int
        /// Whether housekeeping is due in this round.
        var housekeepingDue: Bool
    }

    /// What else asks for a look at the spool in a round.
    struct SpoolSigns {
        /// An observer was added: held frames may have one now.
        var recheckHeld = false
        /// The round's reads suggest a poster spooled (a nudge, or so much that a socket may have been full).
        var suggestsSpooling = false
        /// Taken segments wait for the sockets to be read whole.
        var drainWaiting = false
        /// The socket posters reach failed: nothing is taken until it is bound again.
        var socketFailed = false
    }

    private var lastHousekeeping: UInt64
    /// The bell's value when the spool was last drained for it.
    private var lastBell: UInt64 = 0
    private var lastBellLook: UInt64 = 0
    /// A look at the bell is owed within ``Limits/bellLook``: reads happened after the last look, and a poster
    /// that found the socket full could not nudge.
    private(set) var bellOwed = false
    /// A look at the bell is owed at once: a nudge came after the last look.
    private(set) var bellOwedNow = false
    /// When the socket was last bound anew because it failed, in uptime nanoseconds; 0 never.
    private var lastForcedRebind: UInt64 = 0
    private var lastWaitWarning: UInt64 = 0
    private var round = Round(now: 0, ready: 0, housekeepingDue: false)
    /// What the loop is doing: reading until a round finds something that holds it back.
    private(set) var mode = ReceiveMode.reading

    init(now: UInt64) {
        lastHousekeeping = now
    }

    // MARK: The mode

    /// Takes what the loop learned (``ReceiveMode/handle(_:)``); an event that does not apply to the mode is
    /// refused, and changes nothing.
    @discardableResult
    mutating func handle(_ event: ReceiveMode.Event) -> ReceiveMode.Answer {
        mode.handle(event)
    }

    /// Takes stock, as a round begins, of what holds the loop back, in the order ``ReceiveMode`` takes it: a
    /// hand-over of the spool that stopped for the observers (nothing is read until it is done), the observers'
    /// backlog (read nothing more until they have worked it down: posters fill the sockets, then the spool), then,
    /// unless it hands over, its wait for observers: a `durable` listener's is asked of `observerWait` (only then,
    /// as it ends a wait that is over: ``ReceiveThread/readingWait()``); another listener never waits for them.
    /// A durable listener reads nothing until its first observer is added, nor while it waits for the observers
    /// that follow before it hands its spool over: what is posted meanwhile stays behind the spool's backlog.
    mutating func takeStock(handingOver: Bool, backlogOver: Bool, durable: Bool, observerWait: () -> UInt64?) {
        mode.handle(handingOver ? .handOverStopped : .handOverFinished)
        mode.handle(backlogOver ? .backlogFilled : .backlogHasRoom)
        if !handingOver { mode.handle(ReceiveMode.observerWait(durable ? observerWait() : nil)) }
    }

    /// After the round's reads: takes the backlog as it is now, then, while the loop waits for observers and the
    /// backlog has room, asks `observerWait` again. Returns whether the round ends paused (a hand-over of the
    /// spool is one: ``ReceiveMode/handingOver(resumes:)`` says whether it goes on now); false when it reads. A
    /// wait for observers that ended in this round goes on to look at the spool, with nothing read from the
    /// sockets before it: what they hold comes after the spool's backlog.
    mutating func pausesAfterReads(backlogOver: Bool, observerWait: () -> UInt64?) -> Bool {
        mode.handle(backlogOver ? .backlogFilled : .backlogHasRoom)
        if mode.awaitsObservers { mode.handle(ReceiveMode.observerWait(observerWait())) }
        return !mode.reads
    }

    // MARK: Waiting

    /// How long the round's wait may last in the loop's ``mode``, in milliseconds: while it reads, until
    /// housekeeping or the inbox's own pause (`inboxTimeout`), and no longer than a look at the bell that is owed;
    /// not at all when a hand-over of the spool goes on now, or the loop stops; otherwise until housekeeping or the
    /// end of a wait for observers (``timeout(paused:resumesHandOver:readingWait:inboxTimeout:)``).
    func timeout(inboxTimeout: Int32?) -> Int32 {
        switch mode {
        case .reading:
            timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: inboxTimeout)
        case .handingOver(let resumes):
            timeout(paused: true, resumesHandOver: resumes, readingWait: nil, inboxTimeout: nil)
        case .pausedForBacklog:
            timeout(paused: true, resumesHandOver: false, readingWait: nil, inboxTimeout: nil)
        case .awaitingFirstObserver:
            timeout(paused: true, resumesHandOver: false, readingWait: .max, inboxTimeout: nil)
        case .awaitingObservers(let remaining):
            timeout(paused: true, resumesHandOver: false, readingWait: remaining, inboxTimeout: nil)
        case .stopping:
            0
        }
    }

    /// How long the round's wait may last, in milliseconds: not at all when a hand-over of the spool that stopped
    /// goes on now (`resumesHandOver`: it only runs work handed to the thread); while paused, until housekeeping
    /// or the end of a wait for observers (`readingWait`, in nanoseconds); otherwise until housekeeping or the
    /// inbox's own pause (`inboxTimeout`), and no longer than a look at the bell that is owed.
    func timeout(paused: Bool, resumesHandOver: Bool, readingWait: UInt64?, inboxTimeout: Int32?) -> Int32 {
        let housekeeping = Limits.housekeepingInterval.milliseconds
        if resumesHandOver { return 0 }
        if paused {
            return readingWait.map { min(housekeeping, Int32(clamping: $0 / 1_000_000 + 1)) } ?? housekeeping
        }
        let full = inboxTimeout ?? housekeeping
        return bellOwedNow ? 0 : bellOwed ? min(full, Limits.bellLook.milliseconds) : full
    }

    /// A wait failed at `now`: whether to say so (at most once per ``Limits/repeatedWarningInterval``).
    mutating func waitFailed(at now: UInt64) -> Bool {
        guard now &- lastWaitWarning >= Limits.repeatedWarningInterval.nanoseconds else { return false }
        lastWaitWarning = now
        return true
    }

    /// Begins the decisions of a round, after its reads: housekeeping is due after a wait that ran out the whole
    /// interval, or once the interval passed since the last. A shorter wait that ends (for the bell, the inbox's
    /// own pause, or the end of a wait for observers) is no reason.
    mutating func begin(at now: UInt64, ready: Int, timeout: Int32) -> Round {
        let due = (ready == 0 && timeout == Limits.housekeepingInterval.milliseconds)
            || now &- lastHousekeeping >= Limits.housekeepingInterval.nanoseconds
        if due { lastHousekeeping = now }
        round = Round(now: now, ready: ready, housekeepingDue: due)
        return round
    }

    // MARK: The spool

    /// The round ends paused: the spool waits too, and is looked at as soon as the pause ends.
    mutating func paused() {
        bellOwed = true
    }

    /// Whether the round looks at the bell: when the wait ran out, a look is owed at once, housekeeping is due,
    /// something in `signs` asks, or ``Limits/bellLook`` passed since the last look.
    mutating func looksAtBell(_ signs: SpoolSigns) -> Bool {
        let looks = round.ready == 0 || bellOwedNow || round.housekeepingDue || signs.recheckHeld || signs.suggestsSpooling
            || signs.drainWaiting || round.now &- lastBellLook >= Limits.bellLook.nanoseconds
        bellOwed = !looks
        bellOwedNow = false
        if looks { lastBellLook = round.now }
        return looks
    }

    /// Whether the round drains the spool, having looked at the bell: when it rang since the last drain, or
    /// held frames are to be offered again, housekeeping is due, or taken segments wait. The bell is taken as
    /// seen unless a failed socket keeps the drain from taking anything.
    mutating func drains(bell: UInt64, _ signs: SpoolSigns) -> Bool {
        guard bell != lastBell || signs.recheckHeld || round.housekeepingDue || signs.drainWaiting else { return false }
        if !signs.socketFailed || signs.drainWaiting { lastBell = bell }
        return true
    }

    /// After a drain that read the sockets after its look at the bell (`readMessages`), with nothing left
    /// waiting: a nudge among what it read rang the bell after the look, and a poster whose nudge found the
    /// socket full may have. While taken segments wait, the next round tries again at its usual pace.
    mutating func drained(readMessages: Bool, stillWaiting: Bool, suggestsSpooling: Bool) {
        guard readMessages, !stillWaiting else { return }
        bellOwedNow = suggestsSpooling
        bellOwed = !suggestsSpooling
    }

    // MARK: Sockets

    /// Whether the socket posters reach, which failed, is bound anew in this round: at most once per
    /// ``Limits/forcedRebindInterval`` while the failure lasts.
    mutating func rebindsFailedSocket() -> Bool {
        guard lastForcedRebind == 0 || round.now &- lastForcedRebind >= Limits.forcedRebindInterval.nanoseconds else { return false }
        lastForcedRebind = round.now
        return true
    }

    /// A socket was bound anew: what posters sent to the old one is read after this round's look at the bell, so
    /// one more is owed.
    mutating func rebound() {
        bellOwed = true
    }
}
