import Synchronization

/// What a listener has read and not yet delivered: notifications waiting for observers' queues, actors or async
/// sequences (or in a block running there), counted in notifications and their frames' bytes.
///
/// While it is over its bound, the receive thread reads nothing more: not its sockets (so posters' sends find
/// them full and spool) and not its spool (so the spool, under its cap, holds the rest). It reads again once the
/// observers have worked the backlog down to half the bound. A listener therefore holds at most the bound plus
/// one read: a batch from its sockets, or a chunk of its spool (``Limits/spoolChunkFrames``,
/// ``Limits/spoolChunkBytes``).
package final class DeliveryBacklog: Sendable {
    struct Bound: Sendable {
        var notifications: Int
        var bytes: Int

        /// ``Limits/deliveryBacklogNotifications`` and ``Limits/deliveryBacklogBytes``.
        static let standard = Bound(notifications: Limits.deliveryBacklogNotifications, bytes: Limits.deliveryBacklogBytes)
    }

    let bound: Bound
    private let held = Mutex<(notifications: Int, bytes: Int)>((0, 0))
    /// Wakes the receive thread: called when the backlog falls to half its bound after being over it.
    private let wake = Mutex<(@Sendable () -> Void)?>(nil)

    init(bound: Bound = .standard) {
        self.bound = bound
    }

    /// Sets what wakes the receive thread.
    func onRoom(_ wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
    }

    /// Whether the receive thread should read nothing more now.
    var isOver: Bool {
        held.withLock { $0.notifications > bound.notifications || $0.bytes > bound.bytes }
    }

    /// What is held now, for tests and status.
    var current: (notifications: Int, bytes: Int) { held.withLock { $0 } }

    /// Counts one notification of `bytes` (its frame's) as held until ``release(bytes:)``: what waits in an
    /// observer's observerQueue, released once its block has run, or at once when the observer goes.
    func hold(bytes: Int) {
        held.withLock {
            $0.notifications += 1
            $0.bytes += bytes
        }
    }

    /// Releases one notification of `bytes` held by ``hold(bytes:)``.
    func release(bytes: Int) {
        let woke = held.withLock { held -> Bool in
            let wasOver = held.notifications > bound.notifications / 2 || held.bytes > bound.bytes / 2
            held.notifications -= 1
            held.bytes -= bytes
            return wasOver && held.notifications <= bound.notifications / 2 && held.bytes <= bound.bytes / 2
        }
        if woke { wake.withLock { $0 }?() }
    }
}
