import Dispatch
import Foundation
import Synchronization
import Wormhole

/// What `listen` and `respond` share: a center whose observer runs one notification at a time on `queue`, takes
/// at most `limit` of them, and stops on SIGTERM, SIGINT or a closed standard output, settling first.
///
/// Stopping releases the center: its observers end, and a durable one gives back to its spool what it was handed
/// and has not run (the library's acknowledgement model: a notification counts as taken when its block returns),
/// so the identity's next run gets those, once and in order. The block that runs as the signal comes finishes
/// first; the process exits once `queue` is idle.
final class Consumer: Sendable {
    let limit: Int?
    /// One block at a time, in the order received.
    let queue: OperationQueue
    /// Held only here: released to stop.
    private let open: Mutex<GroupNotificationCenter?>
    private let taken = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)

    init(center: GroupNotificationCenter, limit: Int?) {
        self.limit = limit
        open = Mutex(center)
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
    }

    /// The center while it is open.
    var center: GroupNotificationCenter? { open.withLock { $0 } }

    /// Counts one notification taken, in the observer's block; returns its number, or nil when the limit was
    /// reached already (it is not taken: the observer ends as the limit is reached, so none comes past it).
    func take() -> Int? {
        let count = taken.add(1, ordering: .relaxed).newValue
        return limit.map { count <= $0 } ?? true ? count : nil
    }

    /// Whether `count` is the last the command takes: the block then stops the consumer before it returns.
    func isLast(_ count: Int) -> Bool {
        count == limit
    }

    /// Stops taking: the center goes, and with it its observers, which give back what waits. From the block
    /// itself too: none runs after it. Stopping twice is not an error.
    func stop() {
        let center = open.withLock { center in
            defer { center = nil }
            return center
        }
        // Its observers end now, whoever else still holds the center for a moment (the main thread, handing the
        // spool over): no block runs after this one, and what waits goes back.
        center?.endObservers()
        // Released here, outside the lock.
        _ = consume center
        done.signal()
    }

    /// Waits until the command has what it asked for or is told to stop, lets the block that runs finish, and
    /// exits. A closed standard output stops it as a signal does (writes fail with EPIPE instead of ending the
    /// process).
    func run(saying started: String) -> Never {
        signal(SIGPIPE, SIG_IGN)
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in stop() }
            source.resume()
            return source
        }
        // Its only observer is added: a durable identity's spool is handed over now, not a moment later.
        center?.deliverSpooledNotifications()
        Output.error(started)
        done.wait()
        // The block that runs now finishes, and its drain gives back what it holds.
        stop()
        queue.waitUntilAllOperationsAreFinished()
        withExtendedLifetime(signals) {}
        exit(0)
    }
}
