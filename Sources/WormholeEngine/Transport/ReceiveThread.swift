import Foundation
import Synchronization

/// A listener's receive thread: the thread, the work other threads hand it, and a durable listener's wait for its
/// observers, in one state under one lock; how others end its wait, in ``ReceiveWake``; and three flags, atomics
/// of their own so that a round takes no lock when nothing was handed to it: whether it is to stop (read every
/// round), whether a recheck of held-back spooled frames was asked for (read as it looks at its spool), and
/// whether it runs observers' code now (read by a stop that waits for its end).
///
/// Its life: ready, then running from ``start(named:_:)`` until its body returns, then ended. A stop may be asked
/// for at any time (``requestStop()``); the body sees it (``isStopping``) and returns. The wake pipe closes as
/// the thread ends, or when the listener goes away without ever running.
final class ReceiveThread: Sendable {
    private struct State {
        /// The thread, once it runs.
        var thread: ObjectIdentifier? = nil
        /// Whether an observer was added in this process since the thread started: until then a durable
        /// listener reads nothing, so that what is sent to it waits for its observers in the socket and the spool.
        var observed = false
        /// While a durable listener waits for the observers that start-up code adds one after another before it
        /// hands its spool over: when the wait began and when it ends, in uptime nanoseconds.
        var settling: (began: UInt64, ends: UInt64)? = nil
        /// Work handed to the thread from others: deliveries of this process's own posts.
        var pending: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())
    /// The wake pipe and socket, and the flags with which a wake meets the thread's wait.
    private let waker: ReceiveWake
    /// Set once a stop was asked for (``requestStop()``).
    private let stopping = Atomic<Bool>(false)
    /// Set while the thread runs observers' code (the blocks of observers that run on it, work handed to it):
    /// a stop never waits for that, which may be waiting for the caller.
    private let runsObserverCodeNow = Atomic<Bool>(false)
    /// Set when an observer was added: frames a durable spool holds back may have one now.
    private let recheck = Atomic<Bool>(true)
    /// Entered from ``start(named:_:)`` until the thread ended, for those who wait for its end.
    private let running = DispatchGroup()

    init() throws(WormholeError) {
        waker = try ReceiveWake()
    }

    /// Starts the thread, which runs `body` and then closes the wake pipe; `ended` runs after anyone waiting for
    /// the end was let go.
    func start(named name: String, _ body: @escaping @Sendable () -> Void, ended: @escaping @Sendable () -> Void) {
        running.enter()
        let thread = Thread { [self] in
            let current = ObjectIdentifier(Thread.current)
            state.withLock { $0.thread = current }
            body()
            waker.close()
            running.leave()
            ended()
        }
        thread.name = name
        thread.stackSize = Limits.receiveThreadStack
        thread.start()
    }

    /// The thread, once it runs.
    var identifier: ObjectIdentifier? { state.withLock { $0.thread } }

    /// Whether the caller is the thread itself.
    var isCurrent: Bool {
        let current = ObjectIdentifier(Thread.current)
        return state.withLock { $0.thread == current }
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Asks the thread to end; returns whether this was the first to ask.
    func requestStop() -> Bool {
        !stopping.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Whether the thread ended, or never ran.
    var hasEnded: Bool { running.wait(timeout: .now()) == .success }

    /// Waits at most `limit` for the thread to end; returns whether it did. Never waits on the thread itself,
    /// which would wait for itself: false at once.
    func ends(within limit: Interval) -> Bool {
        !isCurrent && running.wait(timeout: .now() + .nanoseconds(Int(limit.nanoseconds))) == .success
    }

    /// Wakes the thread and waits for it to end, at most `limit`; returns at once when called on the thread
    /// itself, or as soon as the thread runs observers' code (which may be waiting for the caller).
    func waitForEnd(within limit: Interval) {
        guard !isCurrent else { return }
        wake()
        let deadline = DispatchTime.now() + .nanoseconds(Int(limit.nanoseconds))
        while running.wait(timeout: .now() + .nanoseconds(Int(Limits.stopPoll.nanoseconds))) == .timedOut {
            if runsObserverCodeNow.load(ordering: .acquiring) || DispatchTime.now() >= deadline { return }
        }
    }

    /// Ends the thread's wait now (``ReceiveWake/wake()``).
    func wake() {
        waker.wake()
    }

    /// Takes `socket`, connected to the socket the thread reads, for wakes while it waits in a read; nil drops
    /// the one it has (the socket read was bound anew). Called by the thread itself.
    func useWakeSocket(_ socket: consuming OwnedDescriptor?) {
        waker.useSocket(socket)
    }

    /// Whether the thread has a wake socket: it may wait in a read (``waitInRead(_:)``).
    var hasWakeSocket: Bool { waker.hasSocket }

    /// Whether the thread waits, or is about to wait, in a read, and no wake has come for that wait yet.
    var isWaitingInRead: Bool { waker.isWaitingInRead }

    /// Waits in `receive` (a read of the thread's socket that waits) instead of a poll, once it has a wake socket
    /// (``useWakeSocket(_:)``), then runs the work handed to the thread as ``wait(_:timeoutMilliseconds:)``
    /// does. Returns what `receive` returned: whether anything came, or nil when it could not wait so (a poll is
    /// then owed). A wake that came before the read returns at once, without reading
    /// (``ReceiveWake/waitInRead(_:)``).
    func waitInRead(_ receive: () -> Bool?) -> Bool? {
        let result = waker.waitInRead(receive)
        if waker.isWoken { runHandedWork() }
        return result
    }

    /// Runs `work` on the thread, after what it is doing now.
    func perform(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(work) }
        wake()
    }

    /// An observer is being added: while a durable listener's spool holds something (`settling`), or a wait for
    /// observers goes on, the thread reads nothing for ``Limits/handOverSettle`` from now, so that nothing posted
    /// to the observer once it registers overtakes what the spool holds for it.
    func observerAdding(settling: Bool) {
        settle(settling, now: Sys.uptimeNanoseconds, added: false)
    }

    /// An observer was added: held-back spooled frames may have one now. With `settling` (the spool holds
    /// something), they are offered once ``Limits/handOverSettle`` passed without another observer added, at
    /// most ``Limits/handOverSettleLimit`` after the first, and the thread reads nothing meanwhile
    /// (``readingWait()``); without, at once. An observer added while the thread waits so starts the wait again,
    /// whatever the spool holds.
    func observerAdded(settling: Bool) {
        settle(settling, now: Sys.uptimeNanoseconds, added: true)
    }

    private func settle(_ settling: Bool, now: UInt64, added: Bool) {
        let wakes = state.withLock { state -> Bool in
            if added { state.observed = true }
            if let current = state.settling {
                let restarted = max(current.ends, now &+ Limits.handOverSettle.nanoseconds)
                state.settling = (current.began, min(current.began &+ Limits.handOverSettleLimit.nanoseconds, restarted))
            } else if settling {
                state.settling = (now, now &+ Limits.handOverSettle.nanoseconds)
            } else if added {
                recheck.store(true, ordering: .releasing)
            } else {
                return false
            }
            return true
        }
        if wakes { wake() }
    }

    /// Ends a wait for observers (``observerAdded(settling:)``) now: held-back frames are offered to the observers
    /// added so far. Nothing to do when the thread does not wait, or no observer was added yet.
    func handOverNow() {
        let ended = state.withLock { state -> Bool in
            guard state.settling != nil else { return false }
            state.settling = nil
            recheck.store(true, ordering: .releasing)
            return true
        }
        if ended { wake() }
    }

    /// How long a durable listener's thread waits yet before it reads its sockets and its spool again: `.max`
    /// while no observer was added, the rest of a wait for observers, nil when it reads. A wait that is over
    /// ends here, and asks for held-back frames to be offered.
    func readingWait() -> UInt64? {
        let now = Sys.uptimeNanoseconds
        return state.withLock { state -> UInt64? in
            guard state.observed else { return .max }
            guard let settling = state.settling else { return nil }
            guard now < settling.ends else {
                state.settling = nil
                recheck.store(true, ordering: .releasing)
                return nil
            }
            return settling.ends - now
        }
    }

    /// Has the thread offer held-back spooled frames again in a later round, at its usual pace: asked by the
    /// thread itself when it could not offer them now (woken at once, it would only fail again, and spin).
    func recheckLater() {
        recheck.store(true, ordering: .releasing)
    }

    /// Whether a recheck was asked for since the last call.
    func takeRecheck() -> Bool {
        recheck.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Runs observers' code (``waitForEnd(within:)`` does not wait for it).
    func runObserverCode(_ work: () -> Void) {
        runsObserverCodeNow.store(true, ordering: .releasing)
        defer { runsObserverCodeNow.store(false, ordering: .releasing) }
        work()
    }

    /// Empties `set`, then adds the wake pipe as its first descriptor; the caller adds its own after it.
    func prepare(_ set: inout PollSet) {
        waker.prepare(&set)
    }

    /// Waits on `set` (made by ``prepare(_:)``) at most `timeoutMilliseconds`; when woken, empties the wake pipe
    /// and runs the work handed to the thread, unless it is to stop (then the work is dropped, as the thread
    /// ends). Returns how many descriptors have something, the wake pipe included.
    func wait(_ set: inout PollSet, timeoutMilliseconds: CInt) throws(WormholeError) -> Int {
        let ready = try set.wait(timeoutMilliseconds: timeoutMilliseconds)
        if ready > 0, set[0].isReady { runHandedWork() }
        return ready
    }

    /// After a wake: empties the wake pipe and runs the work handed to the thread, unless it is to stop. A wake
    /// that comes meanwhile sets `woken` again, and ends the next wait.
    private func runHandedWork() {
        waker.takeWake()
        let work = state.withLock { state -> [@Sendable () -> Void] in
            guard !stopping.load(ordering: .acquiring) else { return [] }
            defer { state.pending = [] }
            return state.pending
        }
        if !work.isEmpty { runObserverCode { for item in work { item() } } }
    }
}
