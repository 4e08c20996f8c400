import Dispatch
import Testing

extension Peer {
    /// ``waitForExit(timeout:sourceLocation:)`` for async tests: the wait runs on a Dispatch thread, so no thread
    /// of Swift's cooperative pool (two on a two-core machine) is held while the process runs.
    func awaitExit(timeout seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int32 {
        try await onDispatchThread { try self.waitForExit(timeout: seconds, sourceLocation: sourceLocation) }
    }

    /// ``waitForError(containing:count:timeout:sourceLocation:)`` for async tests, on a Dispatch thread.
    func awaitError(containing text: String, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        try await onDispatchThread { try self.waitForError(containing: text, timeout: seconds, sourceLocation: sourceLocation) }
    }

    /// ``waitForLines(_:timeout:sourceLocation:)`` for async tests, on a Dispatch thread.
    @discardableResult
    func awaitLines(_ count: Int, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> [String]
    {
        try await onDispatchThread { try self.waitForLines(count, timeout: seconds, sourceLocation: sourceLocation) }
    }
}

/// Runs `body`, which blocks, on a Dispatch thread, and waits for it without holding a thread of the pool.
func onDispatchThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
    }
}
