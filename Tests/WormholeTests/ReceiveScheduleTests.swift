import Testing
@testable import Wormhole
@testable import WormholeEngine

/// The receive loop's decisions, apart from its sockets and files: each round's wait, when the bell is looked
/// at and the spool drained, when a failed socket is bound anew, and when housekeeping is due.
@Suite("Receive schedule: what the receive loop does when", .throttled)
struct ReceiveScheduleTests {
    private let ms: UInt64 = 1_000_000
    private let second: UInt64 = 1_000_000_000
    private let housekeeping = Limits.housekeepingInterval.milliseconds
    private let bellLook = Limits.bellLook.milliseconds

    /// What a mutating call on `schedule` returns (``#expect`` takes no mutation).
    private func step<T>(_ schedule: inout ReceiveSchedule, _ call: (inout ReceiveSchedule) -> T) -> T {
        call(&schedule)
    }

    /// A schedule that began at `start` and whose first round, at `start` + 1 s, looked at the bell and drained.
    private func settled(at start: UInt64 = 5_000_000_000) -> ReceiveSchedule {
        var schedule = ReceiveSchedule(now: start)
        _ = schedule.begin(at: start + second, ready: 0, timeout: housekeeping)
        #expect(step(&schedule) { $0.looksAtBell(.init()) })
        #expect(step(&schedule) { $0.drains(bell: 1, .init()) })
        return schedule
    }

    @Test("a quiet wait lasts until housekeeping; paused, until the end of a wait for observers")
    func waits() {
        let schedule = settled()
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == housekeeping)
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: 250) == 250)
        #expect(schedule.timeout(paused: true, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == housekeeping)
        #expect(schedule.timeout(paused: true, resumesHandOver: false, readingWait: 500 * ms, inboxTimeout: nil) == 501)
        #expect(schedule.timeout(paused: true, resumesHandOver: false, readingWait: .max, inboxTimeout: nil) == housekeeping)
    }

    @Test("a hand-over of the spool that goes on does not wait, even while a wait for observers lasts")
    func handOverGoesOn() {
        let schedule = settled()
        #expect(schedule.timeout(paused: true, resumesHandOver: true, readingWait: nil, inboxTimeout: nil) == 0)
        #expect(schedule.timeout(paused: true, resumesHandOver: true, readingWait: 500 * ms, inboxTimeout: nil) == 0)
        #expect(schedule.timeout(paused: true, resumesHandOver: true, readingWait: .max, inboxTimeout: nil) == 0)
    }

    @Test("housekeeping is due once a second, or after a wait that ran out the whole interval")
    func housekeepingDue() {
        var schedule = ReceiveSchedule(now: 0)
        #expect(!step(&schedule) { $0.begin(at: 10 * ms, ready: 1, timeout: housekeeping).housekeepingDue })
        // A short wait that ran out (for the bell) is no reason.
        #expect(!step(&schedule) { $0.begin(at: 20 * ms, ready: 0, timeout: bellLook).housekeepingDue })
        #expect(step(&schedule) { $0.begin(at: 30 * ms, ready: 0, timeout: housekeeping).housekeepingDue })
        #expect(!step(&schedule) { $0.begin(at: 40 * ms, ready: 1, timeout: housekeeping).housekeepingDue })
        #expect(step(&schedule) { $0.begin(at: 30 * ms + second, ready: 1, timeout: housekeeping).housekeepingDue })
    }

    @Test("reads after the last look owe one within a bell look; a nudge among them, at once")
    func bellOwed() {
        var schedule = settled()
        let now = 6 * second
        // Something read, nothing suggesting a spool, 2 ms after the last look: not looked at, but owed.
        _ = schedule.begin(at: now + 2 * ms, ready: 1, timeout: housekeeping)
        #expect(!step(&schedule) { $0.looksAtBell(.init()) })
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == bellLook)
        // A round that suggests a poster spooled looks at once.
        _ = schedule.begin(at: now + 3 * ms, ready: 1, timeout: bellLook)
        #expect(step(&schedule) { $0.looksAtBell(.init(suggestsSpooling: true)) })
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == housekeeping)
        // A drain that read a nudge after its look owes the next look at once.
        #expect(step(&schedule) { $0.drains(bell: 2, .init()) })
        schedule.drained(readMessages: true, stillWaiting: false, suggestsSpooling: true)
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == 0)
        _ = schedule.begin(at: now + 4 * ms, ready: 1, timeout: 0)
        #expect(step(&schedule) { $0.looksAtBell(.init()) })
        // One without a nudge owes one within a bell look.
        #expect(!step(&schedule) { $0.drains(bell: 2, .init()) })
        schedule.drained(readMessages: true, stillWaiting: false, suggestsSpooling: false)
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == bellLook)
        // A bell look after the last, without any sign, looks anyway.
        _ = schedule.begin(at: now + 4 * ms + Limits.bellLook.nanoseconds, ready: 1, timeout: bellLook)
        #expect(step(&schedule) { $0.looksAtBell(.init()) })
    }

    @Test("a pause owes a look at the bell for when it ends")
    func pauseOwesALook() {
        var schedule = settled()
        _ = schedule.begin(at: 6 * second, ready: 1, timeout: housekeeping)
        schedule.paused()
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == bellLook)
        #expect(schedule.timeout(paused: true, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == housekeeping)
    }

    @Test("the spool is drained when the bell rang, held frames are to be offered, housekeeping is due or segments wait")
    func drains() {
        var schedule = settled()
        _ = schedule.begin(at: 6 * second, ready: 0, timeout: bellLook)
        #expect(!step(&schedule) { $0.drains(bell: 1, .init()) })
        #expect(step(&schedule) { $0.drains(bell: 1, .init(recheckHeld: true)) })
        #expect(step(&schedule) { $0.drains(bell: 1, .init(drainWaiting: true)) })
        #expect(step(&schedule) { $0.drains(bell: 2, .init()) })
        #expect(!step(&schedule) { $0.drains(bell: 2, .init()) })
        // While the socket failed, a ring is not taken as seen: the drain takes nothing then, and comes again.
        #expect(step(&schedule) { $0.drains(bell: 3, .init(socketFailed: true)) })
        #expect(step(&schedule) { $0.drains(bell: 3, .init()) })
        #expect(!step(&schedule) { $0.drains(bell: 3, .init()) })
        _ = schedule.begin(at: 7 * second, ready: 1, timeout: housekeeping)
        #expect(step(&schedule) { $0.drains(bell: 3, .init()) })
    }

    @Test("a failed socket is bound anew at most once a second, and a rebind owes a look at the bell")
    func rebinds() {
        var schedule = settled()
        _ = schedule.begin(at: 6 * second, ready: 0, timeout: bellLook)
        #expect(step(&schedule) { $0.rebindsFailedSocket() })
        _ = schedule.begin(at: 6 * second + 500 * ms, ready: 0, timeout: bellLook)
        #expect(!step(&schedule) { $0.rebindsFailedSocket() })
        _ = schedule.begin(at: 7 * second, ready: 0, timeout: bellLook)
        #expect(step(&schedule) { $0.rebindsFailedSocket() })
        #expect(step(&schedule) { $0.looksAtBell(.init()) })
        schedule.rebound()
        #expect(schedule.timeout(paused: false, resumesHandOver: false, readingWait: nil, inboxTimeout: nil) == bellLook)
    }

    @Test("a failing wait is said at most once a second")
    func waitFailures() {
        var schedule = ReceiveSchedule(now: 0)
        #expect(step(&schedule) { $0.waitFailed(at: 2 * second) })
        #expect(!step(&schedule) { $0.waitFailed(at: 2 * second + 999 * ms) })
        #expect(step(&schedule) { $0.waitFailed(at: 3 * second) })
    }
}
