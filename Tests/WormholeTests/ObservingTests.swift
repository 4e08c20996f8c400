import Foundation
import Synchronization
import Testing
import Wormhole

@Suite("Adding and removing observers", .throttled)
struct ObservingTests {
    private func post(_ container: TemporaryContainer, _ name: String, object: String? = nil, count: Int = 1, start: Int = 0) async throws {
        var arguments = ["post", "--container", container.path, "--name", name, "--count", "\(count)", "--start", "\(start)"]
        if let object { arguments += ["--object", object] }
        let poster = try Peer("wormhole-test-peer", arguments)
        #expect(try await poster.awaitExit() == 0)
    }

    @Test("removing by token stops deliveries and drops the registration when it was the last")
    func removeByToken() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let kept = Recorder(), removed = Recorder()
        let token = center.addObserver(forName: .init("t"), object: nil, queue: nil, using: removed.block)
        center.addObserver(forName: .init("u"), object: nil, queue: nil, using: kept.block)
        center.removeObserver(token)
        #expect(center.listenerStatus().first?.observing.map(\.name) == ["u"])
        try await post(container, "t")
        try await post(container, "u", start: 1)
        #expect(try await kept.wait(for: 1).first?.number == 1)
        #expect(removed.all.isEmpty)
    }

    @Test("a process's own posts of one name reach the observers it adds and removes between them")
    func ownPostsFollowObserverChanges() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let marker = Recorder(), recorder = Recorder()
        center.addObserver(forName: .init("marker"), object: nil, queue: nil, using: marker.block)
        /// How many observers of this process a post of `i` was handed to: no other process listens.
        func post(_ i: Int, object: String = "a") throws -> Int {
            try center.postReporting(name: .init("n"), object: object, userInfo: ["i": i]).delivered
        }
        // Each asked right after the same was asked before a change: the answer before it must not stand.
        #expect(try post(1) == 0)
        let token = center.addObserver(forName: .init("n"), object: "a", queue: nil, using: recorder.block)
        #expect(try post(2) == 1)
        #expect(try post(3, object: "b") == 0)
        #expect(try post(4) == 1)
        // A removal stops what is on its way: what was posted is awaited first.
        #expect(try await recorder.wait(for: 2).map(\.number) == [2, 4])
        center.removeObserver(token)
        #expect(try post(5) == 0)
        let wildcard = center.addObserver(forName: nil, object: "a", queue: nil, using: recorder.block)
        #expect(try post(6) == 1)
        #expect(try await recorder.wait(for: 3).map(\.number) == [2, 4, 6])
        center.removeObserver(wildcard)
        #expect(try post(7) == 0)
        center.post(name: .init("marker"), object: nil, userInfo: nil)
        _ = try await marker.wait(for: 1)
        #expect(recorder.all.map(\.number) == [2, 4, 6])
    }

    @Test("a name from another process matches as Swift compares strings: each spelling of a character the other's")
    func canonicallyEquivalentNames() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let precomposed = Recorder(), decomposed = Recorder()
        // "é" as one scalar (2 bytes of UTF-8) and as "e" and a combining accent (3 bytes).
        center.addObserver(forName: .init("caf\u{E9}"), object: nil, queue: nil, using: precomposed.block)
        center.addObserver(forName: .init("cafe\u{301}"), object: nil, queue: nil, using: decomposed.block)
        for (start, name) in [(0, "cafe\u{301}"), (1, "caf\u{E9}")] {
            // As the hex of its bytes: Darwin's Process would pass the name decomposed.
            let hex = name.utf8.map { String(format: "%02x", $0) }.joined()
            let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name-hex", hex, "--start", "\(start)"])
            #expect(try await poster.awaitExit(timeout: 60) == 0)
        }
        for recorder in [precomposed, decomposed] {
            // Two posters: in either order.
            let received = try await recorder.wait(for: 2).sorted { ($0.number ?? -1) < ($1.number ?? -1) }
            #expect(received.map(\.number) == [0, 1])
            // Delivered as the poster wrote it.
            #expect(received.map { Array($0.name.utf8) } == [Array("cafe\u{301}".utf8), Array("caf\u{E9}".utf8)])
        }
    }

    @Test("removing by name or object removes only the matching registration")
    func removeByNameAndObject() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        let token = center.addObserver(forName: .init("n"), object: "a", queue: nil, using: recorder.block)
        center.removeObserver(token, name: .init("other"), object: nil)
        center.removeObserver(token, name: nil, object: "b")
        try await post(container, "n", object: "a", start: 1)
        #expect(try await recorder.wait(for: 1).first?.number == 1)
        center.removeObserver(token, name: .init("n"), object: "a")
        #expect(center.listenerStatus().first?.observing.isEmpty == true)
        try await post(container, "n", object: "a", start: 2)
        let marker = Recorder()
        center.addObserver(forName: .init("end"), object: nil, queue: nil, using: marker.block)
        try await post(container, "end")
        try await marker.wait(for: 1)
        #expect(recorder.all.count == 1)
    }

    @Test("an observer block may post and add observers re-entrantly")
    func reentrancy() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let second = Recorder()
        center.addObserver(forName: .init("first"), object: nil, queue: nil) { note in
            center.addObserver(forName: .init("second"), object: nil, queue: nil, using: second.block)
            center.post(name: .init("second"), object: nil, userInfo: ["i": 2])
        }
        try await post(container, "first")
        #expect(try await second.wait(for: 1).first?.number == 2)
    }

    @Test("a nil queue delivers serially, in the order received")
    func serialDefaultQueue() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        let busy = Mutex(false)
        let overlapped = Mutex(false)
        center.addObserver(forName: .init("q"), object: nil, queue: nil) { note in
            if busy.withLock({ let was = $0; $0 = true; return was }) { overlapped.withLock { $0 = true } }
            recorder.block(note)
            busy.withLock { $0 = false }
        }
        center.addObserver(forName: .init("q"), object: nil, queue: nil, using: recorder.block)
        try await post(container, "q", count: 300)
        let received = try await recorder.wait(for: 600)
        #expect(overlapped.withLock { $0 } == false)
        let numbers = received.compactMap(\.number)
        #expect(numbers == (0..<300).flatMap { [$0, $0] })
    }

    @Test("a center's observers go away with it")
    func centerLifetime() throws {
        let container = TemporaryContainer()
        let watcher = try GroupNotificationCenter(containerURL: container.url)
        do {
            let center = try GroupNotificationCenter(containerURL: container.url)
            center.addObserver(forName: .init("gone"), object: nil, queue: nil) { _ in }
            #expect(watcher.listenerStatus().first?.observing.map(\.name) == ["gone"])
        }
        #expect(watcher.listenerStatus().first?.observing.isEmpty == true)
    }
}

@Suite("Observers without a queue", .throttled)
struct ReceiveThreadTests {
    /// Records, per call, the thread it ran on and whether another call was running at the same time.
    final class ThreadLog: Sendable {
        private let state = Mutex<(threads: [ObjectIdentifier], running: Int, overlapped: Bool)>(([], 0, false))
        let recorder = Recorder()

        var block: @Sendable (Notification) -> Void {
            { [self] note in
                state.withLock { state in
                    state.threads.append(ObjectIdentifier(Thread.current))
                    state.running += 1
                    if state.running > 1 { state.overlapped = true }
                }
                usleep(200)  // Widens the window in which an overlapping call would be seen; not a synchronisation.
                state.withLock { $0.running -= 1 }
                recorder.block(note)
            }
        }

        var threads: [ObjectIdentifier] { state.withLock { $0.threads } }
        var overlapped: Bool { state.withLock { $0.overlapped } }
    }

    @Test("posts from this process and from others run one at a time, on one thread that is not the poster's")
    func oneThreadOneAtATime() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let log = ThreadLog()
        center.addObserver(forName: .init("t"), object: nil, queue: nil, using: log.block)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "t", "--count", "200"])
        let posterThread = postFromThisThread(200, on: center)
        #expect(try await poster.awaitExit() == 0)
        try await log.recorder.wait(for: 400)
        #expect(Set(log.threads).count == 1)
        #expect(log.threads.first != posterThread)
        #expect(!log.overlapped)
    }

    @Test("a block that lets go of the last reference to its center does not hang the receive thread")
    func blockReleasesItsCenter() async throws {
        let container = TemporaryContainer()
        let holder = Mutex<GroupNotificationCenter?>(try GroupNotificationCenter(containerURL: container.url))
        let released = Recorder()
        _ = holder.withLock { center in
            center?.addObserver(forName: .init("t"), object: nil, queue: nil) { note in
                // Taken out under the lock, released outside it: the center's deinit stops the listener here.
                let center = holder.withLock { current in defer { current = nil }; return current }
                withExtendedLifetime(center) {}
                released.block(note)
            }
        }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "t", "--count", "1"])
        #expect(try await poster.awaitExit() == 0)
        try await released.wait(for: 1)
        // The listener is gone: a new center in this process can listen in the same container again.
        let again = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        again.addObserver(forName: .init("u"), object: nil, queue: nil, using: recorder.block)
        let second = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "u", "--count", "1"])
        #expect(try await second.awaitExit() == 0)
        try await recorder.wait(for: 1)
    }

    @Test("releasing a center never waits for an observer's block on the receive thread, which ends and cleans up on its own")
    func releaseDoesNotWaitForABlock() async throws {
        let container = TemporaryContainer()
        let holder = Mutex<GroupNotificationCenter?>(try GroupNotificationCenter(containerURL: container.url))
        let entered = DispatchSemaphore(value: 0), goOn = DispatchSemaphore(value: 0), ended = Atomic<Bool>(false)
        _ = holder.withLock { center in
            center?.addObserver(forName: .init("t"), object: nil, queue: nil) { _ in
                entered.signal()
                // Waits for the thread that releases the center: a release that waited for this block would wait
                // as long as this does.
                _ = goOn.wait(timeout: .now() + 60)
                ended.store(true, ordering: .releasing)
            }
        }
        let spools = try FileManager.default.contentsOfDirectory(atPath: container.path + "/spool")
        #expect(spools.count == 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "t", "--count", "1"])
        #expect(try await poster.awaitExit() == 0)
        #expect(entered.wait(timeout: .now() + 20) == .success)
        do {
            let center = holder.withLock { current in defer { current = nil }; return current }
            withExtendedLifetime(center) {}
        }
        // Released while the block still runs: the socket file is gone at once, so posters no longer reach it.
        let endedBeforeRelease = ended.load(ordering: .acquiring)
        #expect(!endedBeforeRelease)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/listeners").filter { $0.hasSuffix(".socket") }.isEmpty)
        goOn.signal()
        // Once the block returns, the thread ends and takes its spool with it.
        try await pollUntil("the spool removed") { !FileManager.default.fileExists(atPath: container.path + "/spool/" + spools[0]) }
        let endedAfter = ended.load(ordering: .acquiring)
        #expect(endedAfter)
        #expect(!FileManager.default.fileExists(atPath: container.path + "/spool/" + spools[0]))
    }
}

/// Posts `count` times from the calling thread, and says which thread that was.
private func postFromThisThread(_ count: Int, on center: GroupNotificationCenter) -> ObjectIdentifier {
    for _ in 0..<count { center.post(name: .init("t"), object: nil) }
    return ObjectIdentifier(Thread.current)
}
