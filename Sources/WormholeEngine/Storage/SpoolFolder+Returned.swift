import Synchronization

extension SpoolFolder {
    /// Writes `frames`, in order, into a new `returned-<number>` file: what an observer of a durable listener was
    /// handed and had not run when it went (removed, its center released, its sequence ended). The identity's
    /// next run reads returned files first, oldest first, before its held files and its segments, since what
    /// they hold was received before anything still waiting there; this run does not read them again.
    ///
    /// Written whole under a temporary name and renamed into place (``HeldWriter``), so a kill leaves the file
    /// whole or absent; never through a link. Returns false, having written nothing, when the file cannot be
    /// made (a full disk, no descriptor): the frames are then lost, as they were handed over already.
    func keepReturned(_ frames: [Frame]) -> Bool {
        guard !frames.isEmpty else { return true }
        guard let writer = HeldWriter(folder: self) else { return false }
        for frame in frames where !writer.append(frame) {
            remove(writer.temporary)
            return false
        }
        // Under the lock: two observers ending together on two threads take two numbers, in order.
        return returnedHere.withLock { own in
            let names = (try? Sys.listDirectory(descriptor)) ?? []
            let largest = names.compactMap(Self.returnedNumber).max() ?? 0
            let (next, overflow) = largest.addingReportingOverflow(1)
            guard !overflow else {
                remove(writer.temporary)
                return false
            }
            let name = Self.returnedPrefix + FileName.hex(next)
            guard writer.publish(as: name) else { return false }
            own.insert(name)
            return true
        }
    }
}
