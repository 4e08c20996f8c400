import Foundation
import Synchronization
import Testing
import Wormhole
@testable import WormholeUI

@Suite("Widget reloads: chosen changes from any process, at most one reload per interval", .throttled)
struct WidgetReloaderTests {
    @Test("the throttle: a lone change at once, a burst folded into one reload at the interval's end")
    func throttle() {
        let start = ContinuousClock.now
        func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
        var throttle = ReloadThrottle(interval: .seconds(2))
        var decisions: [ReloadThrottle.Decision] = []
        var dues: [Bool] = []
        decisions.append(throttle.changed(at: at(0)))
        decisions.append(throttle.changed(at: at(100)))
        decisions.append(throttle.changed(at: at(1500)))  // folded into the scheduled reload
        dues.append(throttle.due(at: at(2000)))
        dues.append(throttle.due(at: at(2001)))  // one reload per schedule
        decisions.append(throttle.changed(at: at(2500)))  // within an interval of the trailing reload
        dues.append(throttle.due(at: at(4000)))
        decisions.append(throttle.changed(at: at(6000)))  // after a quiet interval: at once
        decisions.append(throttle.changed(at: at(9000)))
        #expect(decisions == [.reload, .schedule(at(2000)), .none, .schedule(at(4000)), .reload, .reload])
        #expect(dues == [true, false, true])
    }

    /// Records reloads, and lets a test await the n-th round (every kind reloaded once more).
    final class Reloads: Sendable {
        private let kinds: [String]
        private let calls = Mutex<[(kind: String, at: ContinuousClock.Instant)]>([])
        private let (stream, continuation) = AsyncStream.makeStream(of: Int.self)

        init(kinds: [String]) { self.kinds = kinds }

        var all: [(kind: String, at: ContinuousClock.Instant)] { calls.withLock { $0 } }

        func record(_ kind: String) {
            let count = calls.withLock { $0.append((kind, .now)); return $0.count }
            continuation.yield(count)
        }

        /// Waits until `rounds` rounds were made, for at most `seconds`; false when they were not.
        func wait(rounds: Int, seconds: Int = 20) async -> Bool {
            let calls = rounds * kinds.count
            if all.count >= calls { return true }
            let stream = stream
            return await withTaskGroup(of: Bool.self) { group in
                group.addTask { for await count in stream where count >= calls { return true }; return false }
                group.addTask { try? await Task.sleep(for: .seconds(seconds)); return false }
                let first = await group.next() ?? false
                group.cancelAll()
                return first || self.all.count >= calls
            }
        }
    }

    @Test("changes posted by other processes reload every kind: a burst twice, an interval apart; others not at all",
          .timeLimit(.minutes(10)))
    func acrossProcesses() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let kinds = ["Cart", "Badge"]
        let reloads = Reloads(kinds: kinds)
        let interval = Duration.seconds(2)
        let reloader = WidgetReloader(
            kinds: kinds, center: center, names: [.init("refresh")], values: ["count"], interval: interval
        ) { reloads.record($0) }
        // A burst: five changes of the value, milliseconds apart.
        let burst = try Peer("wormhole-test-peer", ["value-add", "--container", container.path, "--name", "count", "--count", "5"])
        #expect(try await burst.awaitExit() == 0)
        #expect(await reloads.wait(rounds: 1), "the first change reloads at once")
        #expect(await reloads.wait(rounds: 2), "the rest of the burst, at the interval's end")
        let calls = reloads.all
        #expect(calls.prefix(2).map(\.kind) == kinds && calls.dropFirst(2).prefix(2).map(\.kind) == kinds)
        #expect(calls[2].at - calls[0].at >= interval - .milliseconds(50), "an interval apart: \(calls[2].at - calls[0].at)")
        // A notification nobody chose, then a chosen one, each from a process of its own.
        let other = try Peer("wormhole", ["post", "--container", container.path, "--name", "unrelated"])
        #expect(try await other.awaitExit() == 0)
        let refresh = try Peer("wormhole", ["post", "--container", container.path, "--name", "refresh"])
        #expect(try await refresh.awaitExit() == 0)
        #expect(await reloads.wait(rounds: 3))
        #expect(reloads.all.count == 3 * kinds.count, "no other reload: \(reloads.all.map(\.kind))")
        withExtendedLifetime(reloader) {}
    }

    @Test("a reloader that went away reloads nothing, not even what it had scheduled")
    func released() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let reloads = Reloads(kinds: ["Cart"])
        let interval = Duration.seconds(10)
        let start = ContinuousClock.now
        var reloader: WidgetReloader? = WidgetReloader(
            kinds: ["Cart"], center: center, names: [.init("refresh")], interval: interval
        ) { reloads.record($0) }
        reloader?.changed()
        reloader?.changed()  // scheduled for the interval's end
        // Polled on this thread, not awaited: an await may resume long after, when other tests hold Swift's pool,
        // and the reloader must go before its scheduled reload for the test to prove anything.
        func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
            return condition()
        }
        #expect(within(20) { reloads.all.count == 1 }, "the first change reloads at once")
        weak let gone = reloader
        reloader = nil
        // The leading reload's block lets go of it once it has run.
        #expect(within(5) { gone == nil }, "released")
        #expect(ContinuousClock.now - start < interval, "released before its scheduled reload; else the test proves nothing")
        // A later notification reaches an observer of the same name on the same receive thread, but reloads nothing.
        let recorder = Recorder()
        center.addObserver(forName: .init("refresh"), object: nil, queue: nil, using: recorder.block)
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "refresh"])
        #expect(try await poster.awaitExit() == 0)
        _ = try await recorder.wait(for: 1)
        // No signal tells that something did not happen: wait until past the moment it was scheduled for.
        try await Task.sleep(until: start + interval + .milliseconds(300))
        #expect(reloads.all.map(\.kind) == ["Cart"])
    }
}
