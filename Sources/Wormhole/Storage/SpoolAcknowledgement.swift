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

    /// The hand-over is done: `names` go once everything it handed over has run, at once if it all has.
    func seal(removing names: [String]) {
        folder.keepUntilAcknowledged(names)
        let now = state.withLock { state -> Bool in
            if state.outstanding <= 0 { return true }
            state.sealed = names
            return false
        }
        if now { folder.removeAcknowledged(names) }
    }
}
