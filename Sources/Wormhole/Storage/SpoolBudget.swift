import Dispatch
import Synchronization

/// The cap on what all the spools of a container hold together, as one posting process sees it: the total is
/// measured (every spool folder's files) every tenth of a second while this process spools, and again before a
/// post is refused; what it spools meanwhile is added to it. Other processes' posts in that tenth of a second can pass the cap by
/// what they spool in it.
final class SpoolBudget: Sendable {
    private struct State {
        var total = 0
        var measured: UInt64 = 0
        var valid = false
    }


    let limit: Int
    private let container: Container
    private let state = Mutex(State())

    init(container: Container, limit: Int) {
        self.container = container
        self.limit = limit
    }

    /// Counts `bytes` against the cap; throws ``WormholeError/Code/spoolFull`` when they would pass it.
    func reserve(_ bytes: Int) throws(WormholeError) {
        let now = DispatchTime.now().uptimeNanoseconds
        try state.withLock { (state) throws(WormholeError) in
            let over = state.total + bytes > limit
            if !state.valid || now &- state.measured > Limits.spoolBudgetRemeasure.nanoseconds
                || (over && now &- state.measured > Limits.spoolBudgetMinimumRemeasure.nanoseconds)
            {
                state.total = Self.measure(container)
                state.measured = now
                state.valid = true
            }
            guard state.total + bytes <= limit else {
                throw WormholeError(
                    .spoolFull,
                    "the container's spools hold \(state.total) bytes; \(bytes) more would pass its \(limit)-byte limit")
            }
            state.total += bytes
        }
    }

    /// What every spool folder of `container` holds now.
    static func measure(_ container: Container) -> Int {
        let folders = (try? Sys.listDirectory(container.spoolDescriptor)) ?? []
        var total = 0
        for name in folders {
            guard let listener = FileName.value(ofHex: name),
                let folder = try? SpoolFolder(listener: listener, in: container, create: false)
            else { continue }
            total += folder.totalBytes()
        }
        return total
    }
}
