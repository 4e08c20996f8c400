import Foundation
import Synchronization

/// Says once per process that nothing runs the main queue: a drain for the main actor (or the main operation
/// queue) was scheduled, and the main queue has run nothing for ``Limits/mainQueueWait`` since. A tool whose
/// top-level code adds an observer without `queue:` and then sleeps, or waits on a semaphore, never runs its
/// block otherwise.
///
/// One check is armed at a time, so watching costs a timer every few seconds at most, not one per notification.
/// The check asks the main queue itself (a block put there behind the drain), not the observer that armed it:
/// that observer may be removed meanwhile while others wait on. A main actor that is only busy for a while also
/// gets the warning, once; that is not an error.
enum MainQueueWatch {
    private static let state = Mutex<(armed: Bool, warned: Bool)>((false, false))

    /// Whether the main queue has run the block a check put there.
    private final class Probe: Sendable {
        let ran = Atomic<Bool>(false)
    }

    /// Called as a drain is scheduled on the main queue, just after it.
    static func watch() {
        let arm = state.withLock { state -> Bool in
            guard !state.armed, !state.warned else { return false }
            state.armed = true
            return true
        }
        guard arm else { return }
        let probe = Probe()
        DispatchQueue.main.async { probe.ran.store(true, ordering: .releasing) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(Limits.mainQueueWait.nanoseconds))) {
            let stuck = !probe.ran.load(ordering: .acquiring)
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
