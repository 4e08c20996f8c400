import Foundation
import Synchronization
import Testing
import Wormhole

/// Collects what an observer in the test process receives, with bounded waits.
final class Recorder: Sendable {
    struct Received: @unchecked Sendable {
        // Safe because a received notification is only read after it is recorded.
        let note: Notification
        let onQueue: String?
        var name: String { note.name.rawValue }
        var object: String? { note.object as? String }
        var userInfo: [AnyHashable: Any]? { note.userInfo }
        var number: Int? { note.userInfo?["i"] as? Int }
    }

    private let received = Mutex<[Received]>([])
    private let changed = NSCondition()

    /// An observer block that records into this recorder.
    var block: @Sendable (Notification) -> Void {
        { [self] note in
            received.withLock { $0.append(Received(note: note, onQueue: OperationQueue.current?.name)) }
            changed.lock()
            changed.broadcast()
            changed.unlock()
        }
    }

    var all: [Received] { received.withLock { $0 } }

    /// Waits until `count` notifications arrived, or fails the test after `seconds`.
    @discardableResult
    func wait(for count: Int, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> [Received]
    {
        let deadline = Date().addingTimeInterval(seconds)
        changed.lock()
        defer { changed.unlock() }
        while true {
            let current = all
            if current.count >= count { return current }
            guard changed.wait(until: deadline) else {
                Issue.record("received \(current.count) of \(count) notifications in \(seconds) s", sourceLocation: sourceLocation)
                throw Peer.Timeout(description: "notifications")
            }
        }
    }
}
