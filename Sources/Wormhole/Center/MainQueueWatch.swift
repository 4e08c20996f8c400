import Foundation
import Synchronization

/// Says once per process that nothing runs the main queue: a notification for the main actor (or the main
/// operation queue) has waited ``Limits/mainQueueWait`` without its drain starting. A tool whose top-level code
/// adds an observer without `queue:` and then sleeps, or waits on a semaphore, never runs its block otherwise.
///
/// One check is armed at a time, so watching costs a timer every few seconds at most, not one per notification.
/// A main actor that is only busy for a while also gets the warning, once; that is not an error.
enum MainQueueWatch {
    private static let state = Mutex<(armed: Bool, warned: Bool)>((false, false))

    /// Called as a drain of `handoff` is scheduled on the main queue.
    static func watch(_ handoff: Handoff) {
        let arm = state.withLock { state -> Bool in
            guard !state.armed, !state.warned else { return false }
            state.armed = true
            return true
        }
        guard arm else { return }
        let started = handoff.progress.drains
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(Limits.mainQueueWait.nanoseconds))) {
            let progress = handoff.progress
            let stuck = progress.pending && progress.drains == started
            let warn = state.withLock { state -> Bool in
                state.armed = false
                guard stuck, !state.warned else { return false }
                state.warned = true
                return true
            }
            if warn {
                Log.warning("""
                    a notification has waited \(Limits.mainQueueWait.duration) for the main actor, which runs nothing: \
                    run the main queue (dispatchMain(), RunLoop.main.run(), or an app's event loop), or pass a queue: \
                    to addObserver (queue: nil runs the block on the receive thread)
                    """)
            }
        }
    }
}
