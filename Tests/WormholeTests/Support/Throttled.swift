import Foundation
import Testing

/// Runs at most a few tests of this process at once. Every suite carries it.
///
/// Tests wait for other processes with `await`, holding no thread, so the test library would start every test at
/// once: hundreds of processes on two cores, where each test's bounded waits run out. A slot is awaited, not
/// blocked on, so that the tests that run keep Swift's pool (two threads here) free for their actors and tasks.
/// `WORMHOLE_TEST_WIDTH` sets how many run at once (default: twice the active processors, at least 4).
struct Throttled: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // Each test case holds a slot; a suite, or a test as a whole, holds none.
        guard testCase != nil else { return try await function() }
        await TestSlots.shared.acquire()
        do {
            try await function()
        } catch {
            await TestSlots.shared.release()
            throw error
        }
        await TestSlots.shared.release()
    }
}

extension Trait where Self == Throttled {
    /// At most a few tests of this process at once (``Throttled``).
    static var throttled: Self { Self() }
}

/// The slots ``Throttled`` hands out, in the order asked for.
actor TestSlots {
    static let shared = TestSlots(
        width: Int(ProcessInfo.processInfo.environment["WORMHOLE_TEST_WIDTH"] ?? "")
            ?? max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) {
        free = max(1, width)
    }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
