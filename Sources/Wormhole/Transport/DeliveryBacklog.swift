import Synchronization

/// What a listener has read and not yet delivered: notifications waiting for observers' queues, actors or async
/// sequences (or in a block running there), counted in notifications and their frames' bytes.
///
/// While it is over its bound, the receive thread reads nothing more: not its sockets (so posters' sends find
/// them full and spool) and not its spool (so the spool, under its cap, holds the rest). It reads again once the
/// observers have worked the backlog down to half the bound. A listener therefore holds at most the bound plus
/// one read: a batch from its sockets, or a chunk of its spool (``Limits/spoolChunkFrames``,
/// ``Limits/spoolChunkBytes``).
final class DeliveryBacklog: Sendable {
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

    /// Counts `notifications` of `bytes` as held until the returned ticket is released (or dropped).
    func hold(notifications: Int, bytes: Int) -> Ticket {
        held.withLock {
            $0.notifications += notifications
            $0.bytes += bytes
        }
        return Ticket(backlog: self, notifications: notifications, bytes: bytes)
    }

    /// Counts one notification of `bytes` as held until ``release(bytes:)``: for what waits in a handoff, which
    /// releases each of its notifications once, without a ticket each.
    func hold(bytes: Int) {
        held.withLock {
            $0.notifications += 1
            $0.bytes += bytes
        }
    }

    /// Releases one notification of `bytes` held by ``hold(bytes:)``.
    func release(bytes: Int) {
        release(notifications: 1, bytes: bytes)
    }

    private func release(notifications: Int, bytes: Int) {
        let woke = held.withLock { held -> Bool in
            let wasOver = held.notifications > bound.notifications / 2 || held.bytes > bound.bytes / 2
            held.notifications -= notifications
            held.bytes -= bytes
            return wasOver && held.notifications <= bound.notifications / 2 && held.bytes <= bound.bytes / 2
        }
        if woke { wake.withLock { $0 }?() }
    }

    /// Part of the backlog: released once, when the deliveries it carries have run, when every observer they were
    /// for was removed, or when it is dropped unrun (a queue that went away).
    final class Ticket: Sendable {
        private let backlog: DeliveryBacklog
        private let notifications: Int
        private let bytes: Int
        private let released = Atomic<Bool>(false)

        fileprivate init(backlog: DeliveryBacklog, notifications: Int, bytes: Int) {
            self.backlog = backlog
            self.notifications = notifications
            self.bytes = bytes
        }

        var isReleased: Bool { released.load(ordering: .acquiring) }

        func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            backlog.release(notifications: notifications, bytes: bytes)
        }

        deinit {
            release()
        }
    }
}
