import Foundation
import Observation
import Synchronization
import Testing
@testable import Wormhole

@Suite("Group values: read anywhere, updated atomically across processes, watched")
struct GroupValueTests {
    private func value(of peer: Peer, _ key: String) -> Int? {
        peer.jsonLines().last { $0[key] != nil }?[key] as? Int
    }

    @Test("4 processes × 500 concurrent updates, one stopped a second inside its update, end at 2,000 everywhere",
          .timeLimit(.minutes(5)))
    func concurrentUpdates() throws {
        let container = TemporaryContainer()
        let arguments = ["value-add", "--container", container.path, "--name", "counter", "--count", "500", "--expect", "2000"]
        let stopped = try Peer("wormhole-test-peer", arguments + ["--stop-at", "250"])
        let others = try (0..<3).map { _ in try Peer("wormhole-test-peer", arguments) }
        try stopped.waitUntilStopped(timeout: 60)
        let since = Date()
        // The others finish all their updates while one is stopped in the middle of its own.
        for peer in others {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                // Counted before looking, so that a "done" printed in between is not waited past.
                let seen = peer.output.count
                if value(of: peer, "done") != nil { break }
                _ = try peer.waitForLines(seen + 1, timeout: 60)
            }
            #expect(value(of: peer, "done") == 500)
        }
        #expect(stopped.isStopped)
        // Stopped a second at least, as the scenario goes.
        let remaining = 1 - Date().timeIntervalSince(since)
        if remaining > 0 { usleep(UInt32(remaining * 1_000_000)) }
        stopped.signal(SIGCONT)
        for peer in others + [stopped] {
            #expect(try peer.waitForExit(timeout: 120) == 0)
            #expect(value(of: peer, "final") == 2000, "every observer's last value")
            #expect(value(of: peer, "read") == 2000)
        }
        // A process started afterwards, with every writer gone, reads it.
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "counter"])
        #expect(try reader.waitForExit() == 0)
        #expect(reader.output == ["2000"])
    }

    @Test("an updater killed mid-way: every completed update counts once, plus at most the one it was in")
    func killedUpdater() throws {
        let container = TemporaryContainer()
        let arguments = ["value-add", "--container", container.path, "--name", "k", "--count", "300"]
        let victim = try Peer("wormhole-test-peer", arguments)
        let others = try (0..<2).map { _ in try Peer("wormhole-test-peer", arguments) }
        _ = try victim.waitForLines(100, timeout: 60)
        victim.signal(SIGKILL)
        _ = try? victim.waitForExit()
        for peer in others { #expect(try peer.waitForExit(timeout: 60) == 0) }
        let completed = 600 + victim.jsonLines().filter { $0["added"] != nil }.count
        let center = try GroupNotificationCenter(containerURL: container.url)
        let final = GroupValue("k", default: 0, in: center).value
        #expect(final >= completed && final <= completed + 1, "\(final) after \(completed) completed updates")
    }

    @Test("a change made by another process reaches Observation tracking and the values sequence, in order")
    func observed() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let value = GroupValue("obs", default: 0, in: center, tracksChanges: true)
        let changed = DispatchSemaphore(value: 0)
        #expect(withObservationTracking({ value.value }, onChange: { changed.signal() }) == 0)
        var iterator = value.values.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        for number in [5, 6] {
            let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "obs", "--set", "\(number)"])
            #expect(try writer.waitForExit() == 0)
            #expect(await iterator.next() == number)
        }
        #expect(changed.wait(timeout: .now() + 20) == .success)
        #expect(value.value == 6)
    }

    @Test("each change is an ordinary notification: the value and its version")
    func announced() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: GroupValue<[Int]>.notificationName(for: "list"), object: nil, queue: nil, using: recorder.block)
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "list", "--set", "[1, 2]"])
        #expect(try writer.waitForExit() == 0)
        let note = try #require(try recorder.wait(for: 1).first)
        #expect(note.userInfo?["value"] as? [Int] == [1, 2])
        #expect(note.userInfo?["version"] as? Int == 1)
        #expect(GroupValue("list", default: [Int](), in: center).value == [1, 2])
    }

    @Test("a stored value of another type reads as the default, counted; update refuses to overwrite it; reset clears it")
    func otherType() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let number = GroupValue("mixed", default: 0, in: center)
        try number.set(3)
        let text = GroupValue("mixed", default: "none", in: center)
        #expect(text.value == "none")
        #expect(center.statistics.valuesRejected == 1)
        #expect(throws: WormholeError.self) { try text.set("three") }
        #expect(number.value == 3)
        try text.reset()
        #expect(number.value == 0 && text.value == "none")
        try text.set("three")
        #expect(text.value == "three")
    }

    @Test("a value set through its property in one process is seen in another; a failed set leaves it as it was")
    func bindableSetter() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let unread = GroupValue("unread", default: 0, in: center)
        let changed = DispatchSemaphore(value: 0)
        _ = withObservationTracking({ unread.value }, onChange: { changed.signal() })
        unread.value = 9
        #expect(changed.wait(timeout: .now() + 20) == .success, "this process's observation is told")
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "unread"])
        #expect(try reader.waitForExit() == 0)
        #expect(reader.output.last == "9")
        // A value of another type is not overwritten: the setter logs and counts, and throws nothing.
        let text = GroupValue("unread", default: "none", in: center)
        text.value = "nine"
        #expect(center.statistics.valueWritesFailed == 1)
        #expect(unread.value == 9)
    }

    @Test("reading a value once makes the process no listener; tracking changes does")
    func readOnce() throws {
        let container = TemporaryContainer()
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "k", "--set", "4"])
        #expect(try writer.waitForExit() == 0)
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("k", default: 0, in: center).value == 4)
        #expect(center.listenerStatus().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/listeners").filter { !$0.hasPrefix(".") }.isEmpty)
        let tracked = GroupValue("k", default: 0, in: center, tracksChanges: true)
        #expect(tracked.value == 4)
        #expect(center.listenerStatus().count == 1)
    }
}
