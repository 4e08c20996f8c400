import Foundation
import Synchronization

extension Handoff {
    /// A hand-over to a queue: one block or operation per wake-up, which runs `block` with everything waiting.
    ///
    /// An `OperationQueue` gets an operation, so that its `isSuspended` and `maxConcurrentOperationCount` hold, and
    /// `cancelAllOperations()` drops what waits without stopping later deliveries;
    /// the main operation queue, whose operations run on the main queue, gets a block there, which costs less,
    /// while it is not suspended (suspended, it gets an operation, which waits as its others do).
    static func onQueue(_ queue: OperationQueue?, serialQueue: DispatchQueue, block: @escaping @Sendable (Notification) -> Void)
        -> Handoff
    {
        guard let queue else {
            return Handoff { handoff in serialQueue.async { handoff.drain(block) } }
        }
        let isMain = queue === OperationQueue.main
        return Handoff { handoff in
            if isMain && !queue.isSuspended {
                DispatchQueue.main.async { handoff.drain(block) }
                MainQueueWatch.watch()
                return
            }
            let started = DrainStart()
            let operation = BlockOperation {
                started.flag.store(true, ordering: .releasing)
                handoff.drain(block)
            }
            // Cancelled before it started (`cancelAllOperations()`): what it stood for is dropped, as a cancelled
            // operation's work is, and the next arrival schedules again.
            operation.completionBlock = {
                if !started.flag.load(ordering: .acquiring) { handoff.abandon() }
            }
            queue.addOperation(operation)
        }
    }

    /// A hand-over to `block`'s actor: one job there per wake-up, which runs the block with everything waiting
    /// (each notification made a value by `convert`; nil skips it). The main actor's job is enqueued on it
    /// directly; a nonisolated block runs on the center's serial queue, needing no free thread of Swift's pool.
    static func onActor<Value>(
        of block: @escaping @isolated(any) @Sendable (Value) -> Void, serialQueue: DispatchQueue,
        convert: @escaping @Sendable (Notification) -> Value?
    ) -> Handoff {
        guard let isolation = block.isolation else {
            return Handoff { handoff in
                // Runs here, to its end where the platform can start a task on this thread: the block is synchronous
                // and nonisolated.
                serialQueue.async { startTaskHere { await drain(on: nil, handoff, block, convert) } }
            }
        }
        if isolation === MainActor.shared {
            return Handoff { handoff in
                Task { @MainActor in await drain(on: MainActor.shared, handoff, block, convert) }
                MainQueueWatch.watch()
            }
        }
        return Handoff { handoff in Task { await drain(on: isolation, handoff, block, convert) } }
    }

    /// Runs on the block's actor, so that the check that the observer is still there and the call happen
    /// together: none starts after ``Handoff/end()`` ran on that actor.
    private static func drain<Value>(
        on actor: isolated (any Actor)?, _ handoff: Handoff, _ block: @escaping @isolated(any) @Sendable (Value) -> Void,
        _ convert: @Sendable (Notification) -> Value?
    ) async {
        while var entries = handoff.takeAll() {
            while let entry = entries.popLast() {
                if handoff.isOpen, let value = convert(entry.note.value) {
                    nonisolated(unsafe) let value = value
                    await block(value)
                }
                entry.release()
            }
        }
    }
}

/// Whether an operation's drain has started, for its completion block.
private final class DrainStart: Sendable {
    let flag = Atomic<Bool>(false)
}
