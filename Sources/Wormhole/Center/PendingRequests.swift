import Synchronization

/// The requests a process waits on, by id: each ends once, with the first of its reply, its timeout or its
/// task's cancellation; what comes later for it finds nothing and is dropped by the caller.
final class PendingRequests: Sendable {
    private struct Slot {
        var waiter: CheckedContinuation<SendableNotification, any Error>?
        /// How it ended, while nobody waits yet.
        var outcome: Result<SendableNotification, any Error>?
    }

    private let slots = Mutex<[String: Slot]>([:])

    /// Starts a request: from now on, its reply is kept until it is waited for.
    func register(_ id: String) {
        slots.withLock { $0[id] = Slot() }
    }

    /// Forgets a request that was never waited for (its post failed).
    func remove(_ id: String) {
        _ = slots.withLock { $0.removeValue(forKey: id) }
    }

    /// Waits for `id`'s outcome: at once if it ended already.
    func wait(_ id: String, _ waiter: CheckedContinuation<SendableNotification, any Error>) {
        let outcome = slots.withLock { slots -> Result<SendableNotification, any Error>? in
            guard var slot = slots[id] else { return .failure(CancellationError()) }
            if let outcome = slot.outcome {
                slots[id] = nil
                return outcome
            }
            slot.waiter = waiter
            slots[id] = slot
            return nil
        }
        if let outcome { waiter.resume(with: outcome) }
    }

    /// Waits for the reply to `id`, its timeout, or the cancellation of the calling task, whichever comes first.
    func reply(to id: String) async throws -> SendableNotification {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { wait(id, $0) }
        } onCancel: {
            _ = finish(id, with: .failure(CancellationError()))
        }
    }

    /// Ends `id` with `outcome`; false when it had ended already or is unknown, so `outcome` is not used.
    func finish(_ id: String, with outcome: Result<SendableNotification, any Error>) -> Bool {
        let waiter = slots.withLock { slots -> (CheckedContinuation<SendableNotification, any Error>?, Bool) in
            guard var slot = slots[id], slot.outcome == nil else { return (nil, false) }
            guard let waiter = slot.waiter else {
                slot.outcome = outcome
                slots[id] = slot
                return (nil, true)
            }
            slots[id] = nil
            return (waiter, true)
        }
        waiter.0?.resume(with: outcome)
        return waiter.1
    }
}
