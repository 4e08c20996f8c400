import Dispatch
import Foundation

/// Whether the caller runs where a user interface's code runs: on the main thread, or in a job of the main queue.
///
/// On Apple platforms the main actor and the main queue run on the main thread. On Linux, a program whose main is
/// `async` (or that calls `dispatchMain()`) leaves the main queue to other threads, one job at a time, so main-actor
/// code there is not on the main thread; the queue is told apart by a mark set on it.
enum MainQueue {
    /// The key of the mark set on the main queue, once, before the first check.
    private static let mark = Mark()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: mark.key, value: true)
        return true
    }()

    /// Holds the key. Safe because the key is never changed, and Dispatch makes setting and reading a queue's
    /// value for it thread-safe (the SDKs of some platforms do not mark the key `Sendable`).
    private final class Mark: @unchecked Sendable {
        let key = DispatchSpecificKey<Bool>()
    }

    /// True on the main thread and in the main queue's jobs (main-actor code), false elsewhere.
    static var isCurrent: Bool {
        if Thread.isMainThread { return true }
        return marked && DispatchQueue.getSpecific(key: mark.key) == true
    }
}
