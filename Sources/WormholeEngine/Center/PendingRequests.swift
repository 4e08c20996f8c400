import Dispatch
import Synchronization

/// The requests a process waits on, by id: each ends once, with the first of its reply, its timeout or its
/// task's cancellation; what comes later for it finds nothing and is dropped by the caller.
///
/// Timeouts share one timer, armed for the earliest deadline, and a queue of deadlines in which an ended request
/// leaves an entry of a few dozen bytes until the queue is next compacted (whenever it holds twice as many as the
/// requests still waiting): what a request keeps goes back when it ends, not when its timeout passes.
package final class PendingRequests: Sendable {
    fileprivate struct Slot {
        var waiter: CheckedContinuation<SendableNotification, any Error>?
        /// How it ended, while nobody waits yet.
        var outcome: Result<SendableNotification, any Error>?
        /// What it fails with at its deadline, once its timeout started.
        var timeout: WormholeError?
        /// How many listeners the request reached, once its post said; nil before.
        var reached: Int?
        /// How many of them said that nobody answers there (a bridge to other hosts, for one).
        var declined = 0
        /// What it fails with once every listener it reached declined.
        var noResponder: WormholeError?
    }

    fileprivate struct State {
        var slots: [String: Slot] = [:]
        /// The deadlines of started timeouts, earliest first: a min-heap by uptime in nanoseconds. An entry whose
        /// request ended stays until it comes up or the heap is compacted.
        var deadlines = DeadlineHeap()
        /// The deadline the timer is armed for; nil while it is not.
        var armed: UInt64?
        /// Made on the first timeout: a center that never asks has no timer (nor the descriptors a dispatch
        /// source may take).
        var timer: TimeoutTimer?
    }

    private let state = Mutex(State())

    package init() {}

    deinit {
        state.withLock { $0.timer?.source.cancel() }
    }

    /// The timer, made on first use.
    private func timer(_ state: inout State) -> TimeoutTimer {
        if let timer = state.timer { return timer }
        let timer = TimeoutTimer()
        timer.source.setEventHandler { [weak self] in self?.expire() }
        state.timer = timer
        return timer
    }

    /// Starts a request: from now on, its reply is kept until it is waited for.
    package func register(_ id: String) {
        state.withLock { $0.slots[id] = Slot() }
    }

    /// Forgets a request that was never waited for (its post failed).
    package func remove(_ id: String) {
        state.withLock { state in
            state.slots[id] = nil
            state.compactIfSparse()
        }
    }

    /// Starts `id`'s timeout: unless it ended first, it ends with `error` `nanoseconds` from now.
    package func expire(_ id: String, after nanoseconds: UInt64, with error: WormholeError) {
        let (deadline, overflow) = Sys.uptimeNanoseconds.addingReportingOverflow(nanoseconds)
        let at = overflow ? UInt64.max : deadline
        // Armed under the lock, so that two threads never leave it armed for the later of two deadlines.
        state.withLock { state in
            guard state.slots[id] != nil, state.slots[id]?.outcome == nil else { return }
            state.slots[id]?.timeout = error
            state.deadlines.push(at, id)
            guard state.armed.map({ at < $0 }) ?? true else { return }
            state.armed = at
            timer(&state).arm(at: at)
        }
    }

    /// Notes that `id`'s post reached `count` listeners: once as many have declined it (``decline(_:)``), it ends
    /// with `error`.
    package func reached(_ id: String, count: Int, otherwise error: WormholeError) {
        let settled = state.withLock { state -> Bool in
            guard var slot = state.slots[id], slot.outcome == nil else { return false }
            slot.reached = count
            slot.noResponder = error
            state.slots[id] = slot
            return slot.declined >= count
        }
        if settled { _ = finish(id, with: .failure(error)) }
    }

    /// Notes that one listener `id` reached says nobody answers there. Before its post said how many it
    /// reached, counted for then. False when `id` is unknown or ended already.
    package func decline(_ id: String) -> Bool {
        let (known, error) = state.withLock { state -> (Bool, WormholeError?) in
            guard var slot = state.slots[id], slot.outcome == nil else { return (false, nil) }
            slot.declined += 1
            state.slots[id] = slot
            guard let reached = slot.reached, slot.declined >= reached else { return (true, nil) }
            return (true, slot.noResponder)
        }
        if let error { _ = finish(id, with: .failure(error)) }
        return known
    }

    /// Waits for `id`'s outcome: at once if it ended already.
    func wait(_ id: String, _ waiter: CheckedContinuation<SendableNotification, any Error>) {
        let outcome = state.withLock { state -> Result<SendableNotification, any Error>? in
            guard var slot = state.slots[id] else { return .failure(CancellationError()) }
            if let outcome = slot.outcome {
                state.slots[id] = nil
                state.compactIfSparse()
                return outcome
            }
            slot.waiter = waiter
            state.slots[id] = slot
            return nil
        }
        if let outcome { waiter.resume(with: outcome) }
    }

    /// Waits for the reply to `id`, its timeout, or the cancellation of the calling task, whichever comes first.
    package func reply(to id: String) async throws -> SendableNotification {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { wait(id, $0) }
        } onCancel: {
            _ = finish(id, with: .failure(CancellationError()))
        }
    }

    /// Ends `id` with `outcome`; false when it had ended already or is unknown, so `outcome` is not used.
    package func finish(_ id: String, with outcome: Result<SendableNotification, any Error>) -> Bool {
        let waiter = state.withLock { state -> (CheckedContinuation<SendableNotification, any Error>?, Bool) in
            guard var slot = state.slots[id], slot.outcome == nil else { return (nil, false) }
            guard let waiter = slot.waiter else {
                slot.outcome = outcome
                slot.timeout = nil
                state.slots[id] = slot
                return (nil, true)
            }
            state.slots[id] = nil
            state.compactIfSparse()
            return (waiter, true)
        }
        waiter.0?.resume(with: outcome)
        return waiter.1
    }

    /// What the bookkeeping holds: requests not yet ended or waited for, and entries in the deadline queue.
    var held: (requests: Int, deadlines: Int) {
        state.withLock { ($0.slots.count, $0.deadlines.count) }
    }

    /// On the timer: ends each request whose deadline passed, and arms the timer for the next.
    private func expire() {
        let now = Sys.uptimeNanoseconds
        let due = state.withLock { state -> [(String, WormholeError)] in
            var due: [(String, WormholeError)] = []
            while let (deadline, id) = state.deadlines.first, deadline <= now {
                state.deadlines.popFirst()
                if let error = state.slots[id]?.timeout { due.append((id, error)) }
            }
            state.armed = state.deadlines.first?.deadline
            if let next = state.armed { timer(&state).arm(at: next) }
            return due
        }
        for (id, error) in due { _ = finish(id, with: .failure(error)) }
    }
}

extension PendingRequests.State {
    /// Rebuilds the deadline queue from the requests still waiting once it holds twice as many entries, so that
    /// ended requests do not accumulate in it until their deadlines.
    fileprivate mutating func compactIfSparse() {
        guard deadlines.count > 64, deadlines.count > 2 * slots.count else { return }
        deadlines.keep { slots[$0]?.timeout != nil }
    }
}

/// Deadlines and the requests they end, earliest first.
private struct DeadlineHeap {
    private var entries: [(deadline: UInt64, id: String)] = []

    var count: Int { entries.count }
    var first: (deadline: UInt64, id: String)? { entries.first }

    mutating func push(_ deadline: UInt64, _ id: String) {
        entries.append((deadline, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popFirst() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        siftDown(from: 0)
    }

    /// Keeps only the entries whose id `isWanted` says, in heap order.
    mutating func keep(_ isWanted: (String) -> Bool) {
        entries.removeAll { !isWanted($0.id) }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// The one timer of a process's pending requests.
/// Safe because the source is made and resumed before it is shared, and `DispatchSource` is thread-safe after.
private final class TimeoutTimer: @unchecked Sendable {
    let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())

    init() {
        source.schedule(deadline: .distantFuture)
        // Resumed at once (a suspended source must not be released): it does nothing until given a handler.
        source.resume()
    }

    /// Fires once at `deadline`, uptime in nanoseconds (the clock `DispatchTime` counts).
    func arm(at deadline: UInt64) {
        let now = Sys.uptimeNanoseconds
        let wait = deadline > now ? deadline - now : 0
        source.schedule(deadline: .now() + .nanoseconds(Int(clamping: wait)))
    }
}
