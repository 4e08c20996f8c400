import Foundation
import Synchronization

extension ObserverQueue {
    /// A hand-over to a queue: one block or operation per wake-up, which runs `block` with everything waiting.
    ///
    /// An `OperationQueue` gets an operation, so that its `isSuspended` and `maxConcurrentOperationCount` hold, and
    /// `cancelAllOperations()` drops what waits without stopping later deliveries;
    /// the main operation queue, whose operations run on the main queue, gets a block there, which costs less,
    /// while it is not suspended (suspended, it gets an operation, which waits as its others do).
    package static func onQueue(_ queue: OperationQueue?, serialQueue: DispatchQueue, block: @escaping @Sendable (Notification) -> Void)
        -> ObserverQueue
    {
        guard let queue else {
            return ObserverQueue { observerQueue in serialQueue.async { observerQueue.drain(block) } }
        }
        let isMain = queue === OperationQueue.main
        return ObserverQueue { observerQueue in
            if isMain && !queue.isSuspended {
                DispatchQueue.main.async { observerQueue.drain(block) }
                MainQueueWatch.watch()
                return
            }
            queue.addOperation(DrainOperation(observerQueue, block))
        }
    }

    /// A hand-over to `block`'s actor: one job there per wake-up, which runs the block with everything waiting
    /// (each notification made a value by `convert`; nil skips it). On an actor, that job is one task that stays
    /// for the observer's life, parked while nothing waits, so a wake-up makes no task; a nonisolated block runs
    /// on the center's serial queue instead, needing no free thread of Swift's pool.
    package static func onActor<Value>(
        of block: @escaping @isolated(any) @Sendable (Value) -> Void, serialQueue: DispatchQueue,
        convert: @escaping @Sendable (Notification) -> Value?
    ) -> ObserverQueue {
        guard let isolation = block.isolation else {
            return ObserverQueue { observerQueue in
                // Runs here, to its end where the platform can start a task on this thread: the block is synchronous
                // and nonisolated.
                serialQueue.async { startTaskHere { await drain(on: nil, observerQueue, block, convert) } }
            }
        }
        if isolation === MainActor.shared {
            // Its jobs on the main queue: resuming it where it parked costs one block there, no hop through the
            // global pool.
            return ObserverQueue(onMainQueue: true) { observerQueue in
                Task(executorPreference: MainQueueTaskExecutor.shared) {
                    await pump(on: MainActor.shared, observerQueue, block, convert)
                }
            }
        }
        return ObserverQueue { observerQueue in Task { await pump(on: isolation, observerQueue, block, convert) } }
    }

    /// Runs on the block's actor, so that the check that the observer is still there and the call happen
    /// together: none starts after ``ObserverQueue/end()`` ran on that actor. Inlined, so that an actor's drain
    /// (``pump(on:_:_:_:)``), already on that actor, does not switch to it and back for each wake-up.
    @inline(__always)
    private static func drain<Value>(
        on actor: isolated (any Actor)?, _ observerQueue: ObserverQueue, _ block: @escaping @isolated(any) @Sendable (Value) -> Void,
        _ convert: @Sendable (Notification) -> Value?, staying: Bool = false
    ) async {
        while var entries = observerQueue.takeAll(staying: staying) {
            while let entry = entries.popLast() {
                guard observerQueue.isOpen else {
                    observerQueue.stopDraining(at: entry, rest: entries)
                    break
                }
                if let value = convert(entry.note.value) {
                    nonisolated(unsafe) let value = value
                    await block(value)
                }
                entry.release()
            }
        }
    }

    /// An actor's drain for the observer's life: drains, parks until more arrives, and ends once the observer went.
    private static func pump<Value>(
        on actor: isolated any Actor, _ observerQueue: ObserverQueue, _ block: @escaping @isolated(any) @Sendable (Value) -> Void,
        _ convert: @escaping @Sendable (Notification) -> Value?
    ) async {
        repeat {
            await drain(on: actor, observerQueue, block, convert, staying: true)
        } while await observerQueue.park(on: actor)
    }
}

/// An operation that runs one drain, or, cancelled before it started (`cancelAllOperations()`), gives up what it
/// stood for, as a cancelled operation's work is dropped, so that the next arrival schedules again.
///
/// Whichever comes first, `main()` or `cancel()`, decides: a drain that started runs to its end. It needs no
/// completion block, which Foundation on Linux runs on a global queue: a second wake-up for every operation.
/// It holds the observer's queue and block themselves, not closures over them: one allocation per wake-up, not three.
// Safe because what it adds to `Operation` is constant and `Sendable`, or atomic (`decided`).
private final class DrainOperation: Operation, @unchecked Sendable {
    private let observerQueue: ObserverQueue
    private let block: @Sendable (Notification) -> Void
    /// 0 while neither has come, 1 once `main()` came first, 2 once `cancel()` did.
    private let decided = Atomic<Int>(0)

    init(_ observerQueue: ObserverQueue, _ block: @escaping @Sendable (Notification) -> Void) {
        self.observerQueue = observerQueue
        self.block = block
    }

    override func main() {
        if decided.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged {
            observerQueue.drain(block)
        }
    }

    override func cancel() {
        super.cancel()
        if decided.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged {
            observerQueue.abandon()
        }
    }
}
