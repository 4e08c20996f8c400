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
/// When the observer goes, what waits is dropped and its backlog released at once, whoever keeps the token: a
/// target that never runs again holds nothing.
final class Handoff: Sendable {
    /// A notification waiting, and the backlog it holds: its frame's bytes, released once.
    struct Entry: Sendable {
        let note: SendableNotification
        let backlog: DeliveryBacklog?
        let bytes: Int

        func release() {
            backlog?.release(bytes: bytes)
        }
    }

    private struct State {
        var waiting: [Entry] = []
        /// Where the oldest entry still waiting is, for a consumer that takes them one at a time.
        var head = 0
        /// Whether a drain is scheduled or running.
        var scheduled = false
        var ended = false
        /// Consumers of a sequence waiting for the next notification, oldest first.
        var consumers: [CheckedContinuation<SendableNotification?, Never>] = []
        /// An actor's drain that waits for more (``Handoff/park()``); it counts as not scheduled.
        var parked: UnsafeContinuation<Bool, Never>?

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
    private let wake: (@Sendable (Handoff) -> Void)?
    /// Whether the target is the main queue, which ``MainQueueWatch`` watches as each drain is scheduled.
    private let onMainQueue: Bool

    init(onMainQueue: Bool = false, wake: (@Sendable (Handoff) -> Void)?) {
        self.onMainQueue = onMainQueue
        self.wake = wake
    }

    /// Whether the observer is still there: a drain runs no block once it went.
    var isOpen: Bool { !ended.load(ordering: .acquiring) }

    /// Hands `notes` (each with its frame's bytes) over, in order, held in `backlog` until they ran.
    func append(_ notes: [(note: SendableNotification, bytes: Int)], backlog: DeliveryBacklog?) {
        var handed: [(CheckedContinuation<SendableNotification?, Never>, SendableNotification)] = []
        var parked: UnsafeContinuation<Bool, Never>?
        let schedule = state.withLock { state -> Bool in
            if state.ended { return false }
            // A consumer waits only while nothing does: it takes the first ones directly.
            var index = 0
            while index < notes.count, !state.consumers.isEmpty {
                handed.append((state.consumers.removeFirst(), notes[index].note))
                index += 1
            }
            while index < notes.count {
                backlog?.hold(bytes: notes[index].bytes)
                state.waiting.append(Entry(note: notes[index].note, backlog: backlog, bytes: notes[index].bytes))
                index += 1
            }
            guard wake != nil, !state.scheduled, state.waiting.count > state.head else { return false }
            state.scheduled = true
            swap(&parked, &state.parked)
            return parked == nil
        }
        for (consumer, note) in handed { consumer.resume(returning: note) }
        if let parked { parked.resume(returning: true) }
        if schedule { wake?(self) }
        if onMainQueue && (schedule || parked != nil) { MainQueueWatch.watch() }
    }

    /// What waits, all of it, for the drain that runs now, newest first, so that the drain lets go of each
    /// notification as it runs it (`popLast`): what it has run no longer takes memory while its backlog lets
    /// the listener read more. Nil once nothing waits (the next arrival schedules again) or the observer went.
    /// A drain that parks when nothing waits (`staying`) stays scheduled until it parks.
    func takeAll(staying: Bool = false) -> [Entry]? {
        state.withLock { state -> [Entry]? in
            guard !state.ended, state.waiting.count > state.head else {
                if !staying { state.scheduled = false }
                return nil
            }
            var entries = state.takeAll()
            entries.reverse()
            return entries
        }
    }

    /// Runs `block` with everything waiting, in order, on the calling thread (the target's), and releases each
    /// notification's backlog once its block ran.
    func drain(_ block: (Notification) -> Void) {
        while var entries = takeAll() {
            withAutoreleasePool {
                while let entry = entries.popLast() {
                    if isOpen { block(entry.note.value) }
                    entry.release()
                }
            }
        }
    }

    /// Waits, for an actor's drain that took everything, until more is handed over: true then, on the drain's actor;
    /// false once the observer went, when the drain ends. At once if something arrived since it last took. Isolated
    /// to the drain's actor, so that waiting here and resuming cost no hop off it and back.
    func park(on actor: isolated any Actor) async -> Bool {
        await withUnsafeContinuation { drain in
            let now = state.withLock { state -> Bool? in
                if state.ended {
                    state.scheduled = false
                    return false
                }
                if state.waiting.count > state.head { return true }
                state.parked = drain
                state.scheduled = false
                return nil
            }
            if let now { drain.resume(returning: now) }
        }
    }

    /// The next notification for a sequence's consumer: at once if one waits, else when one arrives; nil once the
    /// sequence ended.
    func next() async -> SendableNotification? {
        await withCheckedContinuation { consumer in
            let now = state.withLock { state -> (Entry?, ended: Bool) in
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
                    return (entry, false)
                }
                if state.ended { return (nil, true) }
                state.consumers.append(consumer)
                return (nil, false)
            }
            if let entry = now.0 {
                entry.release()
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
            state.scheduled = false
            return state.takeAll()
        }
        for entry in dropped { entry.release() }
    }

    /// Ends the hand-over: what waits is dropped and its backlog released, waiting consumers get nil, and nothing
    /// handed over later is kept. Ending twice is not an error.
    func end() {
        ended.store(true, ordering: .releasing)
        let (dropped, consumers, parked) = state.withLock { state in
            state.ended = true
            defer {
                state.consumers = []
                state.parked = nil
            }
            return (state.takeAll(), state.consumers, state.parked)
        }
        for entry in dropped { entry.release() }
        for consumer in consumers { consumer.resume(returning: nil) }
        parked?.resume(returning: false)
    }
}
