import Foundation
import Testing

/// Polls `condition` until it holds, or fails the test after `seconds`: for what nothing signals (a counter of
/// this process, a spool's depth).
func pollUntil(
    _ what: String, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
            throw Peer.Timeout(description: what)
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
