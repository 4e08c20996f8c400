#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A listener with nothing to do sleeps: no clock wakes it, and what it keeps (its socket file, its registry entry,
/// its spool's bell) wakes it when it changes. Counted by its receive thread (`ReceiveCounts`): the waits that ran
/// out (a clock woke it) and its rounds of housekeeping.
@Suite("An idle listener sleeps: no clock wakes it, changes do", .throttled)
struct IdleListenerTests {
    typealias Transport = GroupNotificationCenter.Transport

    /// A center of `transport` observing "idle" in `container`, once its listener's housekeeping found everything
    /// in order: from then on, only a change or the minute's fallback wakes it.
    private struct Settled {
        let center: GroupNotificationCenter
        let counts: ReceiveCounts
        let recorder: Recorder
        let id: UInt64
    }

    private func settled(_ transport: Transport, _ container: TemporaryContainer) async throws -> Settled {
        let center = try GroupNotificationCenter(
            containerURL: container.url, clientIdentifier: nil, configuration: .init(transport: transport))
        let recorder = Recorder()
        center.addObserver(forName: .init("idle"), object: nil, queue: nil, using: recorder.block)
        let counts = try #require(center.endpoint.listenerCounts)
        let id = try #require(center.endpoint.listenerSpool?.listener)
        try await pollUntil("the listener found everything in order") { counts.housekeepingRounds > 0 && counts.foundInOrder }
        return Settled(center: center, counts: counts, recorder: recorder, id: id)
    }

    /// Whether a socket is at `path`.
    private func isSocket(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }

    @Test(
        "an idle listener schedules no timer: over three seconds with nothing posted, at most one wait runs out and it keeps house at most once",
        arguments: Transport.allCases)
    func idleListenerSchedulesNoTimer(transport: Transport) async throws {
        let container = TemporaryContainer()
        let listener = try await settled(transport, container)
        let runOut = listener.counts.waitsRunOut, housekept = listener.counts.housekeepingRounds
        try await Task.sleep(for: .seconds(3))
        #expect(listener.counts.waitsRunOut - runOut <= 1, "a clock woke it \(listener.counts.waitsRunOut - runOut) times")
        #expect(listener.counts.housekeepingRounds - housekept <= 1)
        // Asleep, not stuck: a post wakes it.
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "idle", "--start", "1"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await listener.recorder.wait(for: 1).compactMap(\.number) == [1])
    }

    @Test(
        "control: a listener that cannot mend its registry entry keeps house once a second, each time woken by a clock, and sleeps again once it can",
        arguments: Transport.allCases)
    func unmendableEntryKeepsThePace(transport: Transport) async throws {
        let container = TemporaryContainer()
        let listener = try await settled(transport, container)
        let entry = container.path + "/registry/" + FileName.hex(listener.id)
        // A folder under its entry's name, which no entry can be renamed over. The listener, told of the removal,
        // may write its entry again before the folder is made: removed again then.
        var planted = false
        for _ in 0..<100 where !planted {
            _ = unlink(entry)
            planted = mkdir(entry, 0o700) == 0
        }
        try #require(planted)
        let runOut = listener.counts.waitsRunOut, housekept = listener.counts.housekeepingRounds
        try await pollUntil("three more rounds of housekeeping, two of them woken by the clock") {
            listener.counts.housekeepingRounds - housekept >= 3 && listener.counts.waitsRunOut - runOut >= 2
        }
        #expect(!listener.counts.foundInOrder)

        // The folder gone, the change wakes it: it registers again and finds everything in order.
        try #require(rmdir(entry) == 0)
        try await pollUntil("registered again, in order") {
            listener.counts.foundInOrder && listener.center.listenerStatus().contains { $0.identifier == FileName.hex(listener.id) }
        }
        let settledRunOut = listener.counts.waitsRunOut
        try await Task.sleep(for: .seconds(3))
        #expect(listener.counts.waitsRunOut - settledRunOut <= 1)
    }

    @Test(
        "a settled listener whose socket file is removed binds it again at once, woken by the change rather than a clock",
        arguments: Transport.allCases)
    func removedSocketFileWakesIt(transport: Transport) async throws {
        let container = TemporaryContainer()
        let listener = try await settled(transport, container)
        let socket = try #require(listener.center.listenerStatus().first { $0.pid == getpid() }?.socketPath)
        let runOut = listener.counts.waitsRunOut, housekept = listener.counts.housekeepingRounds
        try #require(unlink(socket) == 0)
        // Its clock would wake it only in a minute.
        try await pollUntil("the socket file to be back") { isSocket(socket) }
        #expect(listener.counts.housekeepingRounds > housekept)
        // A rebind owes a look at the bell, after a short wait: at most that one ran out.
        #expect(listener.counts.waitsRunOut - runOut <= 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "idle", "--start", "2"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await listener.recorder.wait(for: 1).compactMap(\.number) == [2])
    }

    @Test(
        "a settled listener whose registry entry is removed (as a process that took it for dead does) registers again at once",
        arguments: Transport.allCases)
    func removedEntryWakesIt(transport: Transport) async throws {
        let container = TemporaryContainer()
        let listener = try await settled(transport, container)
        let entry = container.path + "/registry/" + FileName.hex(listener.id)
        let runOut = listener.counts.waitsRunOut
        try #require(unlink(entry) == 0)
        try await pollUntil("the entry to be back") { FileManager.default.fileExists(atPath: entry) }
        // Its clock would wake it only in a minute.
        #expect(listener.counts.waitsRunOut - runOut <= 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "idle", "--start", "3"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await listener.recorder.wait(for: 1).compactMap(\.number) == [3])
    }

    @Test(
        "a settled listener whose bell rings with no nudge (its poster could not reach the socket) drains its spool at once",
        arguments: Transport.allCases)
    func bellWithoutNudgeWakesIt(transport: Transport) async throws {
        let container = TemporaryContainer()
        let listener = try await settled(transport, container)
        let spool = try #require(listener.center.endpoint.listenerSpool)
        let frame = Frame(poster: 7, sequence: 1, name: "idle", object: nil, userInfo: nil).encoded()
        guard let segment = try spool.createSegment(poster: 7, stamp: 1, holding: frame) else {
            Issue.record("the segment was not made")
            return
        }
        // Written and named: its poster's descriptor goes.
        _ = consume segment
        let runOut = listener.counts.waitsRunOut
        spool.bell.touch()
        // Its clock would drain the spool only in a minute.
        #expect(try await listener.recorder.wait(for: 1).map(\.name) == ["idle"])
        #expect(listener.counts.waitsRunOut - runOut <= 1)
    }
}
