import Synchronization

/// What one hand-over of a durable listener's spool gave to observers that run it later (on a queue, an actor, in
/// a sequence), and the files it came from: those stay until every notification handed over has run or been given
/// back, so that a process killed meanwhile has its identity's next run hand them over again (at least once), and
/// no later drain of this run reads them again (``SpoolFolder/keepUntilAcknowledged(_:)``). A notification counts
/// as run when its block returns; they are counted, not written: the files go once, when the count reaches zero.
final class SpoolAcknowledgement: Sendable {
    private struct State {
        var outstanding = 0
        /// The files to remove once nothing is outstanding; nil until the hand-over is done.
        var sealed: [String]?
    }

    private let state = Mutex(State())
    let folder: SpoolFolder

    init(folder: SpoolFolder) {
        self.folder = folder
    }

    /// `count` notifications were handed to observers that run them later.
    func hold(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.outstanding += count }
    }

    /// One of them ran, or was given back, or dropped with its observer.
    func release() {
        let names = state.withLock { state -> [String]? in
            state.outstanding -= 1
            guard state.outstanding <= 0, let names = state.sealed else { return nil }
            state.sealed = nil
            return names
        }
        if let names { folder.removeAcknowledged(names) }
    }

    /// The most a hand-over keeps waiting for its observers: past it, its files go at once (what a kill then
    /// interrupts is lost, as before this was kept), so that an observer that never runs cannot hold the spool's
    /// whole share of the container.
    static let maximumKeptBytes = 2 * Limits.deliveryBacklogBytes

    /// The hand-over is done: `names` go once everything it handed over has run, at once if it all has (or they
    /// hold more than ``maximumKeptBytes``).
    func seal(removing names: [String]) {
        let bytes = names.reduce(0) { total, name in
            let size = (try? Sys.status(name, relativeTo: folder.descriptor, followLinks: false)).map { max(0, $0.size) } ?? 0
            return total.addingReportingOverflow(size).overflow ? .max : total + size
        }
        guard bytes <= Self.maximumKeptBytes else {
            folder.removeAcknowledged(names)
            return
        }
        folder.keepUntilAcknowledged(names)
        let now = state.withLock { state -> Bool in
            if state.outstanding <= 0 { return true }
            state.sealed = names
            return false
        }
        if now { folder.removeAcknowledged(names) }
    }
}
