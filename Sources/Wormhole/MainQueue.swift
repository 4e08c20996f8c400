import Dispatch
import Foundation

/// Whether the caller runs where a user interface's code runs: on the main thread, or in a job of the main queue.
///
/// On Apple platforms the main actor and the main queue run on the main thread. On Linux, a program whose main is
/// `async` (or that calls `dispatchMain()`) leaves the main queue to other threads, one job at a time, so main-actor
/// code there is not on the main thread; the queue is told apart by a mark set on it.
enum MainQueue {
    /// The mark set on the main queue, once, before the first check.
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()

    /// True on the main thread and in the main queue's jobs (main-actor code), false elsewhere.
    static var isCurrent: Bool {
        if Thread.isMainThread { return true }
        return marked && DispatchQueue.getSpecific(key: key) == true
    }
}
