import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// What waits in an observer's queue holds its place in the listener's backlog exactly once: given back when
/// its block has run, or at once when the observer or sequence goes, however it goes.
@Suite("Observer queue: what waits is given back once", .serialized, .throttled)
struct ObserverQueueTests {
    /// What the center's listener holds now.
    private func held(_ center: GroupNotificationCenter) -> (notifications: Int, bytes: Int) {
        center.endpoint.deliveryBacklog?.current ?? (-1, -1)
    }

    /// Waits until `condition` holds; fails the test after 30 s.
    private func wait(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            guard Date() < deadline else { Issue.record("timed out waiting for \(what)"); return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test("an observer removed with notifications waiting on a suspended queue gives their backlog back at once; its block never runs")
    func suspendedQueueRemoved() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Atomic<Int>(0)
        let token = center.addObserver(forName: .init("a"), object: nil, queue: queue) { _ in ran.add(1, ordering: .relaxed) }
        for i in 0..<50 { center.post(name: .init("a"), object: nil, userInfo: ["i": i]) }
        #expect(held(center).notifications == 50)
        center.removeObserver(token)
        #expect(held(center).notifications == 0 && held(center).bytes == 0)
        queue.isSuspended = false
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.addBarrierBlock { done.resume() } }
        #expect(ran.load(ordering: .relaxed) == 0)
        #expect(held(center).notifications == 0)
    }

    @Test("cancelAllOperations drops what waited on the queue; the observer gets what is posted later, and nothing stays held")
    func queueOperationsCancelled() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let queue = OperationQueue()
        queue.isSuspended = true
        let got = Mutex<[Int]>([])
        center.addObserver(forName: .init("a"), object: nil, queue: queue) { note in
            got.withLock { $0.append(note.userInfo?["i"] as? Int ?? -1) }
        }
        for i in 0..<5 { center.post(name: .init("a"), object: nil, userInfo: ["i": i]) }
        queue.cancelAllOperations()
        queue.isSuspended = false
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.addBarrierBlock { done.resume() } }
        #expect(held(center).notifications == 0, "what waited for the cancelled operation is given back")
        for i in 5..<10 { center.post(name: .init("a"), object: nil, userInfo: ["i": i]) }
        try await wait("the later posts") { got.withLock { $0.count } >= 5 }
        #expect(got.withLock { $0 } == Array(5..<10))
        try await wait("the backlog to empty") { held(center).notifications == 0 }
    }

    @Test("an observer that removes itself in its 10th call is not called again, and what waited is given back")
    func removesItselfInside() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Atomic<Int>(0)
        let token = Mutex<(any NSObjectProtocol)?>(nil)
        token.withLock { $0 = center.addObserver(forName: .init("a"), object: nil, queue: queue) { _ in
            if ran.add(1, ordering: .relaxed).newValue == 10, let t = token.withLock({ $0 }) { center.removeObserver(t) }
        } }
        for i in 0..<100 { center.post(name: .init("a"), object: nil, userInfo: ["i": i]) }
        queue.isSuspended = false
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.addBarrierBlock { done.resume() } }
        #expect(ran.load(ordering: .relaxed) == 10)
        #expect(held(center).notifications == 0 && held(center).bytes == 0)
    }

    @Test("a block that posts to its own name gets each post once, in order, and the backlog empties")
    func reentrantPost() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let queue = OperationQueue()
        let got = Mutex<[Int]>([])
        center.addObserver(forName: .init("r"), object: nil, queue: queue) { note in
            let i = note.userInfo?["i"] as? Int ?? -1
            got.withLock { $0.append(i) }
            if i < 200 { center.post(name: .init("r"), object: nil, userInfo: ["i": i + 1]) }
        }
        center.post(name: .init("r"), object: nil, userInfo: ["i": 0])
        try await wait("chain") { got.withLock { $0.count } == 201 }
        #expect(got.withLock { $0 } == Array(0...200))
        try await wait("backlog 0") { held(center).notifications == 0 }
    }

    @Test("a sequence never iterated holds what waits for it until it is dropped, then gives it all back")
    func sequenceNeverIterated() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.addObserver(forName: .init("keep"), object: nil, queue: nil) { _ in }
        do {
            let sequence = center.notifications(named: .init("s"))
            for i in 0..<20 { center.post(name: .init("s"), object: nil, userInfo: ["i": i]) }
            #expect(held(center).notifications == 20)
            _ = sequence
        }
        #expect(held(center).notifications == 0)
    }

    @Test("cancelling the task that waits in next() ends the sequence: nothing is held for it afterwards")
    func sequenceCancelledMidAwait() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let sequence = center.notifications(named: .init("s"))
        let first = Mutex<Int>(0)
        let task = Task {
            for await _ in sequence { first.withLock { $0 += 1 } }
            return "ended"
        }
        center.post(name: .init("s"), object: nil, userInfo: ["i": 0])
        try await wait("one") { first.withLock { $0 } == 1 }
        task.cancel()
        #expect(await task.value == "ended")
        for i in 0..<20 { center.post(name: .init("s"), object: nil, userInfo: ["i": i]) }
        #expect(held(center).notifications == 0)
        _ = sequence
    }

    @Test("two tasks iterating one sequence get each notification once between them")
    func twoTasks() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let sequence = center.notifications(named: .init("s"))
        let box = IntsBox()
        let tasks = [consume(sequence, box), consume(sequence, box)]
        for i in 0..<500 { center.post(name: .init("s"), object: nil, userInfo: ["i": i]) }
        try await wait("all") { box.ints.withLock { $0.count } >= 500 }
        #expect(Set(box.ints.withLock { $0 }) == Set(0..<500))
        #expect(box.ints.withLock { $0.count } == 500)
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
        #expect(held(center).notifications == 0)
    }

    @Test("typed messages that do not decode for an actor observer or a sequence are counted, and their backlog given back")
    func typedRejected() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let got = Mutex<Int>(0)
        let token = center.addObserver(for: CartChanged.self) { (_: CartChanged) in got.withLock { $0 += 1 } }
        let sequence = center.messages(for: CartChanged.self)
        for i in 0..<10 { center.post(name: CartChanged.name, object: nil, userInfo: ["bad": i]) }
        center.post(CartChanged(itemIDs: [1], note: nil, at: Date(timeIntervalSince1970: 1)))
        var iterator = sequence.makeAsyncIterator()
        let message = await iterator.next()
        #expect(message?.itemIDs == [1])
        try await wait("typed") { got.withLock { $0 } == 1 }
        #expect(center.statistics.messagesRejected == 20)
        #expect(held(center).notifications == 0)
        center.removeObserver(token)
    }

    @Test("a center released with work waiting for its queue observer and its sequence gives their backlog back")
    func centerReleasedWithWork() async throws {
        let container = TemporaryContainer()
        let keeper = try GroupNotificationCenter(containerURL: container.url)
        keeper.addObserver(forName: .init("k"), object: nil, queue: nil) { _ in }
        let queue = OperationQueue()
        queue.isSuspended = true
        do {
            let center = try GroupNotificationCenter(containerURL: container.url)
            center.addObserver(forName: .init("a"), object: nil, queue: queue) { _ in }
            let sequence = center.notifications(named: .init("a"))
            for i in 0..<30 { keeper.post(name: .init("a"), object: nil, userInfo: ["i": i]) }
            _ = sequence
        }
        #expect(held(keeper).notifications == 0)
        queue.isSuspended = false
    }

    @Test("removeObserver racing a drain on a concurrent queue: the backlog comes back to zero, never below")
    func removeRacesDrain() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for round in 0..<30 {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 3
            let removed = Atomic<Bool>(false)
            let after = Atomic<Int>(0)
            let name = Notification.Name("race\(round)")
            let token = center.addObserver(forName: name, object: nil, queue: queue) { _ in
                if removed.load(ordering: .acquiring) { after.add(1, ordering: .relaxed) }
            }
            let poster = Task.detached { for i in 0..<300 { center.post(name: name, object: nil, userInfo: ["i": i]) } }
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<3000)))
            center.removeObserver(token)
            removed.store(true, ordering: .releasing)
            await poster.value
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.addBarrierBlock { done.resume() } }
            // Removed from another thread: the one call that had started may still finish, no other.
            #expect(after.load(ordering: .relaxed) <= 1)
            let held = held(center)
            #expect(held.notifications == 0 && held.bytes == 0)
        }
    }
}

/// Numbers received by several tasks.
private final class IntsBox: Sendable {
    let ints = Mutex<[Int]>([])
}

/// A task that iterates `sequence`, recording each number, until the last one.
private func consume(_ sequence: GroupNotifications, _ box: IntsBox) -> Task<Void, Never> {
    Task {
        for await note in sequence {
            let i = note.userInfo?["i"] as? Int ?? -1
            box.ints.withLock { $0.append(i) }
            if i == 499 { break }
        }
    }
}
