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

    /// Counts `bytes` against the cap; throws ``WormholeError/Code/spoolFull`` when they would pass it, and the
    /// system's error when this process is out of descriptors or memory to measure the spools (``measure(_:)``).
    func reserve(_ bytes: Int) throws(WormholeError) {
        let now = Sys.uptimeNanoseconds
        try state.withLock { (state) throws(WormholeError) in
            // Compared by subtraction: a measured total may be held at Int.max.
            let over = bytes > limit - state.total
            if !state.valid || now &- state.measured > Limits.spoolBudgetRemeasure.nanoseconds
                || (over && now &- state.measured > Limits.spoolBudgetMinimumRemeasure.nanoseconds)
            {
                // Out of descriptors, this process cannot tell what the spools hold: the post fails, not the cap.
                state.total = try Self.measure(container)
                state.measured = now
                state.valid = true
            }
            guard bytes <= limit - state.total else {
                throw WormholeError(
                    .spoolFull,
                    "the container's spools hold \(state.total) bytes; \(bytes) more would pass its \(limit)-byte limit")
            }
            state.total += bytes
        }
    }

    /// What every spool folder of `container` holds now. Not an error: a folder that cannot be opened (gone
    /// meanwhile, or not a folder) holds nothing.
    /// - Throws: the system's error when this process is out of descriptors or memory to list or open them
    ///   (``WormholeError/isOutOfResources``): it cannot tell what they hold.
    static func measure(_ container: Container) throws(WormholeError) -> Int {
        let folders: [String]
        do throws(WormholeError) {
            folders = try Sys.listDirectory(container.spoolDescriptor)
        } catch where error.isOutOfResources {
            throw error
        } catch {
            folders = []
        }
        var total = 0
        for name in folders {
            guard let listener = FileName.value(ofHex: name) else { continue }
            let folder: SpoolFolder
            do throws(WormholeError) {
                folder = try SpoolFolder(listener: listener, in: container, create: false)
            } catch where error.isOutOfResources {
                throw error
            } catch {
                continue
            }
            let sum = total.addingReportingOverflow(try folder.totalBytes())
            total = sum.overflow ? .max : sum.partialValue
        }
        return total
    }
}
