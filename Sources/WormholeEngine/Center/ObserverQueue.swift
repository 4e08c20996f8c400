import Foundation
import Synchronization

/// What waits for one observer's thread, actor or consumer: its notifications, in the order received, each
/// holding its place in the listener's ``DeliveryBacklog`` by its frame's bytes until its block has run.
///
/// Handing notifications over wakes the target once: the first that arrives while nothing is scheduled schedules
/// one drain there (a block on a queue), and that drain runs everything waiting, then what arrived meanwhile,
/// before it lets the next arrival schedule again. An actor's drain is a task that stays: once nothing waits, it
/// parks, and the next arrival resumes it on its actor, which costs one job there and no new task. An async
/// sequence's consumer that waits is resumed directly with the next notification.
///
/// When the observer goes, what waits is released from the backlog at once, whoever keeps the token: a target
/// that never runs again holds nothing. An observer of a durable center gives it back (``returns(to:)``): what it
/// was handed and had not run goes back to the spool, in order, for the identity's next run; a drain running as
/// the observer goes finishes the block it is in, and gives back the rest. Otherwise it is dropped.
package final class ObserverQueue: Sendable {
    /// A notification waiting, and the backlog it holds: its frame's bytes, released once.
    struct Entry: Sendable {
        let note: SendableNotification
        let backlog: DeliveryBacklog?
        let bytes: Int
        /// The frame it came from, for an observer that gives back what it did not run; nil otherwise.
        let frame: Frame?
        /// The spool hand-over that keeps its files until this has run, if one does.
        let acknowledgement: SpoolAcknowledgement?

        func release() {
            backlog?.release(bytes: bytes)
            acknowledgement?.release()
        }
    }

    /// Where the target's drain is, and whether the observer is still there.
    ///
    /// An arrival schedules a drain from ``idle`` or wakes a ``parked`` one (``scheduled(holding:)``); the drain
    /// takes what waits (`holding`), runs it, and once nothing waits goes ``idle``, or, an actor's that stays,
    /// ``parked``. A drain whose operation was cancelled before it started goes ``idle`` (``ObserverQueue/abandon()``).
    /// ``ObserverQueue/end()`` leads from any of them to ``ended(holding:)``, for good; a parked drain is resumed then.
    enum Drain {
        /// No drain is scheduled: the next arrival schedules one.
        case idle
        /// A drain is scheduled or running; `holding`: it took entries and has not run them all yet.
        case scheduled(holding: Bool)
        /// An actor's drain waits for more (``ObserverQueue/park(on:)``); it counts as not scheduled.
        case parked(UnsafeContinuation<Bool, Never>)
        /// The observer went. `holding`: a drain still holds entries it took and has not run; as it returns, it
        /// gives them back, and what waits after them, in order.
        case ended(holding: Bool)

        /// Whether the observer went.
        var hasEnded: Bool {
            if case .ended = self { true } else { false }
        }

        /// Whether a drain holds entries it took and has not run.
        var isHolding: Bool {
            switch self {
            case .scheduled(let holding), .ended(let holding): holding
            case .idle, .parked: false
            }
        }
    }

    private struct State {
        var waiting: [Entry] = []
        /// Where the oldest entry still waiting is, for a consumer that takes them one at a time.
        var head = 0
        var drain = Drain.idle
        /// Where what the observer did not run goes as it ends; nil: dropped.
        var returns: SpoolFolder?
        /// Where what could not be given back is counted as dropped.
        var counters: Counters?
        /// Consumers of a sequence waiting for the next notification, oldest first. Each is resumed once: taken out
        /// of here under the lock, then resumed.
        var consumers: [UnsafeContinuation<SendableNotification?, Never>] = []
        /// The spool acknowledgements of what a sequence's consumer took last: it counts as running until the
        /// consumer asks for the next, or the sequence ends.
        var running: [SpoolAcknowledgement] = []

        mutating func takeAll() -> [Entry] {
            var taken: [Entry] = []
            swap(&taken, &waiting)
            defer { head = 0 }
            return head == 0 ? taken : Array(taken[head...])
        }
    }

    private let state = Mutex(State())
    private let ended = Atomic<Bool>(false)
    /// Schedules one drain on the target; nil for a sequence, whose consumer takes what waits.
    private let wake: (@Sendable (ObserverQueue) -> Void)?
    /// Whether the target is the main queue, which ``MainQueueWatch`` watches as each drain is scheduled.
    private let onMainQueue: Bool

    package init(onMainQueue: Bool = false, wake: (@Sendable (ObserverQueue) -> Void)?) {
        self.onMainQueue = onMainQueue
        self.wake = wake
    }

    /// Whether the observer is still there: a drain runs no block once it went.
    var isOpen: Bool { !ended.load(ordering: .acquiring) }

    /// Gives what the observer was handed and did not run back to `spool` as it ends (a durable listener's own).
    package func returns(to spool: SpoolFolder?, counting counters: Counters) {
        state.withLock {
            $0.returns = spool
            $0.counters = counters
        }
    }

    /// Hands `notes` (each with its frame's bytes, and the frame for an observer that gives back) over, in order,
    /// held in `backlog` until they ran.
    func append(
        _ notes: [(note: SendableNotification, bytes: Int, frame: Frame?)], backlog: DeliveryBacklog?,
        acknowledging acknowledgement: SpoolAcknowledgement? = nil
    ) {
        // The consumers handed a notification, to resume after the lock: mostly one, which then needs no array.
        var handedFirst: (UnsafeContinuation<SendableNotification?, Never>, SendableNotification)?
        var handed: [(UnsafeContinuation<SendableNotification?, Never>, SendableNotification)] = []
        var parked: UnsafeContinuation<Bool, Never>?
        var late: [Entry] = []
        var lateKept = true
        let schedule = state.withLock { state -> Bool in
            if case .ended(let holding) = state.drain {
                // Read for the observer as it went: given back after what it left, in order, or else dropped.
                guard state.returns != nil else { return false }
                acknowledgement?.hold(notes.count)
                let entries = notes.map {
                    Entry(note: $0.note, backlog: nil, bytes: 0, frame: $0.frame, acknowledgement: acknowledgement)
                }
                if holding {
                    state.waiting.append(contentsOf: entries)
                } else {
                    lateKept = Self.write(entries, to: state)
                    late = entries
                }
                return false
            }
            // A consumer waits only while nothing does: it takes the first ones directly.
            acknowledgement?.hold(notes.count)
            var index = 0
            while index < notes.count, !state.consumers.isEmpty {
                let consumer = (state.consumers.removeFirst(), notes[index].note)
                if handedFirst == nil { handedFirst = consumer } else { handed.append(consumer) }
                if let acknowledgement { state.running.append(acknowledgement) }
                index += 1
            }
            while index < notes.count {
                // Read once: each read of a field through the array copied the whole element.
                let handing = notes[index]
                backlog?.hold(bytes: handing.bytes)
                state.waiting.append(Entry(
                    note: handing.note, backlog: backlog, bytes: handing.bytes, frame: handing.frame,
                    acknowledgement: acknowledgement))
                index += 1
            }
            guard wake != nil, state.waiting.count > state.head else { return false }
            switch state.drain {
            case .idle:
                state.drain = .scheduled(holding: false)
                return true
            case .parked(let drain):
                state.drain = .scheduled(holding: false)
                parked = drain
                return false
            case .scheduled, .ended:
                return false
            }
        }
        Self.settle(late, givenBack: lateKept)
        if let (consumer, note) = handedFirst { consumer.resume(returning: note) }
        for (consumer, note) in handed { consumer.resume(returning: note) }
        if let parked { parked.resume(returning: true) }
        if schedule { wake?(self) }
        if onMainQueue && (schedule || parked != nil) { MainQueueWatch.watch() }
    }

    /// What waits, all of it, for the drain that runs now, newest first, so that the drain lets go of each
    /// notification as it runs it (`popLast`): what it has run no longer takes memory while its backlog lets
    /// the listener read more. Nil once nothing waits (the next arrival schedules again) or the observer went.
    /// A drain that parks when nothing waits (`staying`) stays scheduled until it parks.
    /// Once the observer went, what the drain left waiting is given back, and nil returned.
    func takeAll(staying: Bool = false) -> [Entry]? {
        var left: [Entry] = []
        var leftKept = true
        let taken = state.withLock { state -> [Entry]? in
            guard !state.drain.hasEnded, state.waiting.count > state.head else {
                switch state.drain {
                case .ended(holding: true):
                    left = state.takeAll()
                    leftKept = Self.write(left, to: state)
                    state.drain = .ended(holding: false)
                case .scheduled:
                    state.drain = staying ? .scheduled(holding: false) : .idle
                case .idle, .parked, .ended(holding: false):
                    break
                }
                return nil
            }
            var entries = state.takeAll()
            entries.reverse()
            // A parked drain stays parked: only the drain that was scheduled takes.
            if case .parked = state.drain {} else { state.drain = .scheduled(holding: true) }
            return entries
        }
        Self.settle(left, givenBack: leftKept)
        return taken
    }

    /// For a drain that found the observer gone: gives back `entry` and the rest of what it took (`rest`, newest
    /// first, as ``takeAll(staying:)`` returns them), in order. The drain then takes again, which gives back what
    /// waits after them.
    func stopDraining(at entry: Entry, rest: [Entry]) {
        let entries = [entry] + rest.reversed()
        let kept = state.withLock { Self.write(entries, to: $0) }
        Self.settle(entries, givenBack: kept)
    }

    /// Writes the frames of `entries` back to `spool`, if the observer gives back. Called under the state's lock,
    /// so that what is given back, by the drain, ``end()`` or a late ``append(_:backlog:)``, reaches the spool in
    /// the order received.
    /// Returns false when they could not be written (a full disk): then the spool files they came from stay for
    /// the identity's next run, which hands them over again (``settle(_:givenBack:)``).
    private static func write(_ entries: [Entry], to state: State) -> Bool {
        guard let spool = state.returns, !entries.isEmpty else { return true }
        let frames = entries.compactMap(\.frame)
        guard spool.keepReturned(frames) else {
            Log.warning("\(frames.count) notification(s) an observer had not run could not be given back to the spool of listener \(FileName.hex(spool.listener)); what came from the spool stays there for the next run, what came from the socket is lost")
            let fromSocket = entries.filter { $0.acknowledgement == nil }.count
            if fromSocket > 0 { state.counters?.count { $0.dropped += fromSocket } }
            return false
        }
        return true
    }

    /// Releases what `entries` hold: their place in the backlog, and, unless they could not be given back, their
    /// spool acknowledgement (the files they came from then stay until this process ends).
    private static func settle(_ entries: [Entry], givenBack: Bool) {
        for entry in entries {
            if givenBack { entry.release() } else { entry.backlog?.release(bytes: entry.bytes) }
        }
    }

    /// Runs `block` with everything waiting, in order, on the calling thread (the target's), and releases each
    /// notification's backlog once its block ran.
    func drain(_ block: (Notification) -> Void) {
        while var entries = takeAll() {
            withAutoreleasePool {
                while let entry = entries.popLast() {
                    guard isOpen else { return stopDraining(at: entry, rest: entries) }
                    block(entry.note.value)
                    entry.release()
                }
            }
        }
    }

    /// Waits, for an actor's drain that took everything, until more is handed over: true then, on the drain's actor;
    /// false once the observer went, when the drain ends. At once if something arrived since it last took. Isolated
    /// to the drain's actor, so that waiting here costs no hop off it. Resumed, the drain's task runs first on its
    /// task executor: the main actor's, on the main queue (``MainQueueTaskExecutor``), so it is there at once; another
    /// actor's, on Swift's global pool, from which it hops to its actor.
    func park(on actor: isolated any Actor) async -> Bool {
        await withUnsafeContinuation { drain in
            let now = state.withLock { state -> Bool? in
                if state.drain.hasEnded { return false }
                if state.waiting.count > state.head { return true }
                state.drain = .parked(drain)
                return nil
            }
            if let now { drain.resume(returning: now) }
        }
    }

    /// The next notification for a sequence's consumer: at once if one waits, else when one arrives; nil once the
    /// sequence ended.
    func next() async -> SendableNotification? {
        await withUnsafeContinuation { consumer in
            let now = state.withLock { state -> (Entry?, ended: Bool, finished: [SpoolAcknowledgement]) in
                // Asking again: what it took before has run.
                var finished: [SpoolAcknowledgement] = []
                swap(&finished, &state.running)
                if state.waiting.count > state.head {
                    let entry = state.waiting[state.head]
                    state.head += 1
                    if state.head == state.waiting.count {
                        state.waiting.removeAll(keepingCapacity: true)
                        state.head = 0
                    } else if state.head >= 64 && state.head * 2 >= state.waiting.count {
                        state.waiting.removeFirst(state.head)
                        state.head = 0
                    }
                    if let acknowledgement = entry.acknowledgement { state.running.append(acknowledgement) }
                    return (entry, false, finished)
                }
                if state.drain.hasEnded { return (nil, true, finished) }
                state.consumers.append(consumer)
                return (nil, false, finished)
            }
            for acknowledgement in now.finished { acknowledgement.release() }
            if let entry = now.0 {
                // Its place in the backlog goes now; its acknowledgement once the consumer asks again.
                entry.backlog?.release(bytes: entry.bytes)
                consumer.resume(returning: entry.note)
            } else if now.ended {
                consumer.resume(returning: nil)
            }
        }
    }

    /// The drain scheduled will not run (its operation was cancelled before it started): what waits is dropped and
    /// its backlog released, and the next arrival schedules again. Not an error: nothing is counted.
    func abandon() {
        let dropped = state.withLock { state -> [Entry] in
            if case .scheduled = state.drain { state.drain = .idle }
            return state.takeAll()
        }
        for entry in dropped { entry.release() }
    }

    /// Ends the hand-over: what waits is given back (``returns(to:)``) or dropped, and its backlog released;
    /// waiting consumers get nil, and nothing handed over later is kept. A drain that holds entries it has not run
    /// gives those back, then what waits, once its block returns. Ending twice is not an error.
    func end() {
        ended.store(true, ordering: .releasing)
        let (dropped, kept, consumers, parked, running) = state.withLock { state in
            var parked: UnsafeContinuation<Bool, Never>?
            if case .parked(let drain) = state.drain { parked = drain }
            let holding = state.drain.isHolding
            state.drain = .ended(holding: holding)
            defer {
                state.consumers = []
                state.running = []
            }
            let dropped = holding ? [] : state.takeAll()
            let kept = Self.write(dropped, to: state)
            return (dropped, kept, state.consumers, parked, state.running)
        }
        Self.settle(dropped, givenBack: kept)
        for acknowledgement in running { acknowledgement.release() }
        for consumer in consumers { consumer.resume(returning: nil) }
        parked?.resume(returning: false)
    }
}
