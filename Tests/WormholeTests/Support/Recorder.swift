import Foundation
import Synchronization
import Testing
import Wormhole

/// Collects what an observer in the test process receives, with bounded waits.
final class Recorder: Sendable {
    struct Received: @unchecked Sendable {
        // Safe because a received notification is only read after it is recorded.
        let note: Notification
        let onQueue: String?
        var name: String { note.name.rawValue }
        var object: String? { note.object as? String }
        var userInfo: [AnyHashable: Any]? { note.userInfo }
        var number: Int? { note.userInfo?["i"] as? Int }
    }

    /// What arrived, and the tests that wait for a count of it.
    private struct State {
        var received: [Received] = []
        var waiters: [(id: Int, count: Int, waiter: CheckedContinuation<Bool, Never>)] = []
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// An observer block that records into this recorder.
    var block: @Sendable (Notification) -> Void {
        { [self] note in
            let ready = state.withLock { state in
                state.received.append(Received(note: note, onQueue: OperationQueue.current?.name))
                let count = state.received.count
                let ready = state.waiters.filter { $0.count <= count }.map(\.waiter)
                state.waiters.removeAll { $0.count <= count }
                return ready
            }
            for waiter in ready { waiter.resume(returning: true) }
        }
    }

    var all: [Received] { state.withLock { $0.received } }

    /// Waits until `count` notifications arrived, or fails the test after `seconds`. Awaits, so that it holds no
    /// thread of Swift's pool (two here) while it waits: tasks and actors of other tests run meanwhile.
    @discardableResult
    func wait(for count: Int, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> [Received]
    {
        let arrived = await withCheckedContinuation { waiter in
            let id = state.withLock { state -> Int? in
                if state.received.count >= count { return nil }
                state.nextWaiter += 1
                state.waiters.append((state.nextWaiter, count, waiter))
                return state.nextWaiter
            }
            guard let id else { return waiter.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                let late = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index).waiter
                }
                late?.resume(returning: false)
            }
        }
        let current = all
        guard arrived else {
            Issue.record("received \(current.count) of \(count) notifications in \(seconds) s", sourceLocation: sourceLocation)
            throw Peer.Timeout(description: "notifications")
        }
        return current
    }
}
