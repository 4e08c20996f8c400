import Dispatch
import Foundation
import Testing

extension Peer {
    /// ``waitForExit(timeout:sourceLocation:)`` for async tests: the wait runs on a thread of its own, so no thread
    /// of Swift's cooperative pool (two on a two-core machine) is held while the process runs.
    func awaitExit(timeout seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int32 {
        try await onDispatchThread { try self.waitForExit(timeout: seconds, sourceLocation: sourceLocation) }
    }

    /// ``waitForError(containing:count:timeout:sourceLocation:)`` for async tests, on a thread of its own.
    func awaitError(
        containing text: String, count: Int = 1, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await onDispatchThread {
            try self.waitForError(containing: text, count: count, timeout: seconds, sourceLocation: sourceLocation)
        }
    }

    /// ``waitForLines(_:timeout:sourceLocation:)`` for async tests, on a thread of its own.
    @discardableResult
    func awaitLines(_ count: Int, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> [String]
    {
        try await onDispatchThread { try self.waitForLines(count, timeout: seconds, sourceLocation: sourceLocation) }
    }
}

/// Runs `body`, which blocks, on a thread of its own, and waits for it without holding a thread of Swift's pool or
/// of Dispatch's global queues (which the system grows slowly when their threads block).
func onDispatchThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
