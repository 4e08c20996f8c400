import Synchronization

/// What a listener's receive thread did besides reading, counted so that a test can tell that an idle listener
/// sleeps: the waits that ran out (a clock woke the thread, not a post, a change or another thread), its rounds
/// of housekeeping, and whether the last of them found everything in order (from then on, only a change wakes
/// it). Written by the receive thread alone, and never in a round that read something, so that receiving costs
/// nothing more; read from any thread.
package final class ReceiveCounts: Sendable {
    private let runOut = Atomic<Int>(0)
    private let housekept = Atomic<Int>(0)
    private let settled = Atomic<Bool>(false)

    init() {}

    /// The waits that ran out their time, since the listener started.
    package var waitsRunOut: Int { runOut.load(ordering: .relaxed) }

    /// The rounds of housekeeping, since the listener started.
    package var housekeepingRounds: Int { housekept.load(ordering: .relaxed) }

    /// Whether the last round of housekeeping found everything in order, with every part watched: the listener
    /// then waits for a change, or for ``Limits/idleHousekeepingInterval``.
    package var foundInOrder: Bool { settled.load(ordering: .relaxed) }

    /// A wait ran out its time.
    func waitRanOut() {
        runOut.wrappingAdd(1, ordering: .relaxed)
    }

    /// A round of housekeeping began.
    func keepsHouse() {
        housekept.wrappingAdd(1, ordering: .relaxed)
    }

    /// A round of housekeeping ended, having found everything in order or not.
    func keptHouse(inOrder: Bool) {
        settled.store(inOrder, ordering: .relaxed)
    }
}
