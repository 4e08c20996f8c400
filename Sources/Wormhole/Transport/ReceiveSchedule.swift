/// What the receive loop is doing, and what is due when: the decisions of ``Listener/run()`` as a value, apart
/// from its sockets and files, so that each can be read and tested on its own.
///
/// A round of the loop:
/// 1. **Waits** (``timeout(paused:resumesHandOver:readingWait:inboxTimeout:)``) on the wake pipe, and on the sockets unless it is paused (the observers hold too
///    much, or a durable listener waits for its observers). A failed wait is said at most once a second
///    (``waitFailed(at:)``).
/// 2. **Reads** what the sockets hold, then looks at the time (``begin(at:ready:timeout:)``): housekeeping is
///    due once a second.
/// 3. While **paused**, the spool waits too (``paused()``): a look at the bell is owed for when the pause ends. A
///    hand-over of the spool that stopped because the observers held too much is a pause of its own: the round
///    goes on with it when they have room (``timeout(paused:resumesHandOver:readingWait:inboxTimeout:)`` is then
///    0), and otherwise only keeps the registry entry when housekeeping is due.
/// 4. Otherwise it **looks at the bell** when something suggests a poster spooled (``looksAtBell(_:)``), and
///    **drains** the spool when the bell rang or something else asks for it (``drains(bell:_:)``,
///    ``drained(readMessages:stillWaiting:suggestsSpooling:)``).
/// 5. **Rebinds** a socket that failed, at most once a second (``rebindsFailedSocket()``), and **keeps house**
///    when due, which may rebind a socket file that was removed (``rebound()``).
///
/// The bell costs a read of a file, so it is looked at only when a round suggests a poster spooled, and
/// otherwise at most ``Limits/bellLook`` after a wake-up that did not look: a poster whose socket was full could
/// not nudge.
import WormholeFormats
import WormholeSystem

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

    init(now: UInt64) {
        lastHousekeeping = now
    }

    // MARK: Waiting

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
