import Foundation
import Synchronization

/// What the receive thread does to keep its listener reachable: it puts the socket file back if it was removed or
/// replaced, binds a failed socket anew, keeps a wake socket for a wait in a read, has the sink keep this process's
/// registry entry, and keeps its watch of all that whole (``ListenerWatch``).
///
/// When: as soon as the watch tells of a change to one of them, or the wake socket is lost; once a second while
/// one of them is out of order and not mended yet (or cannot be watched), and in the first second; otherwise at
/// most ``Limits/idleHousekeepingInterval`` apart, for what no watch tells (``ReceiveSchedule/housekept(inOrder:)``).
extension Listener {
    /// Puts the socket file back if it was removed or replaced, tries again for a wake socket if there is none,
    /// has the sink keep this process's registry entry, and watches again what is no longer watched. Then tells
    /// `schedule` whether everything was found in order: only then does the listener wait for the watch.
    func keepHouse(
        _ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule, _ watch: inout ListenerWatch
    ) {
        // A stop removed the socket file, which the watch told: it stays removed.
        guard !thread.isStopping else { return }
        counts.keepsHouse()
        let socketKept = keepSocketFile(inbox, force: false, &drain, &schedule)
        if !hasWakeSocket { connectWakeSocket() }
        let entryKept = sink.keepHouse(for: self)
        watch.renew()
        let inOrder = socketKept && entryKept && watch.isWhole && inbox.boundSocketFailure == nil
            && (transport != .datagram || hasWakeSocket) && !drain.isWaiting && !drain.isHandingOver
            && !drain.leftForLater
        schedule.housekept(inOrder: inOrder)
        counts.keptHouse(inOrder: inOrder)
    }

    /// While a hand-over of the spool stopped for the observers: keeps only the registry entry (the sockets are
    /// left alone meanwhile), and stays at housekeeping's pace until the hand-over is done.
    func keepRegistration(_ schedule: inout ReceiveSchedule) {
        counts.keepsHouse()
        _ = sink.keepHouse(for: self)
        schedule.housekept(inOrder: false)
        counts.keptHouse(inOrder: false)
    }

    /// Whether the thread has a socket that wakes it from a wait in a read (``connectWakeSocket()``).
    var hasWakeSocket: Bool { thread.hasWakeSocket }

    /// For a datagram listener: connects a socket to the one posters reach, which wakes the thread from a wait
    /// in its read (``ReceiveThread/waitInRead(_:)``). Only while the socket file is still the one bound: a socket
    /// connected to another would not wake it. Without one the thread polls, as for sequenced packets.
    func connectWakeSocket() {
        guard transport == .datagram, let expected = socketFile.withLock({ $0 }) else { return }
        let socket: OwnedDescriptor
        do throws(WormholeError) {
            socket = try UnixSocket.connect(
                .datagram, directory: container.listenersDescriptor, directoryPath: container.listenersPath,
                name: RegistryEntry.socketName(id))
        } catch {
            return
        }
        // Closed as it goes when the file changed meanwhile.
        guard currentSocketFile() == expected else { return }
        thread.useWakeSocket(socket)
    }

    /// Puts the socket file back when it was removed or replaced (a cleaner of temporary files), or with `force`
    /// replaces the socket because it failed: binds a new socket under the name, and keeps reading what posters
    /// sent to the old one, which is handed over (or kept while taken segments wait). A rebind reads the old
    /// socket after the round's look at the bell: one more is owed. Returns whether the socket file is the
    /// listener's own now (or there is nothing to bind in: the container was moved or removed as a whole).
    @discardableResult
    func keepSocketFile(
        _ inbox: any Inbox, force: Bool, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule
    ) -> Bool {
        let expected = socketFile.withLock { $0 }
        guard force || currentSocketFile() != expected || expected == nil else { return true }
        // A container moved or removed as a whole is the endpoint's to report; there is nothing to bind in.
        guard container.isAtItsPath else { return true }
        InjectedFault.rebound()
        var frames: [Frame] = []
        var bound = false
        do throws(WormholeError) {
            let fresh = force ? try bindAnew() : try Self.bind(id, identity: identity, transport: transport, in: container)
            inbox.rebind(fresh, into: &frames)
            socketFile.withLock { $0 = currentSocketFile() }
            // The wake socket reaches the old socket: one for the new.
            thread.useWakeSocket(nil)
            connectWakeSocket()
            if !force {
                sink.warn("socket file of listener \(FileName.hex(id)) was removed or replaced; bound it again")
            }
            schedule.rebound()
            bound = true
        } catch {
            sink.warn("socket file of listener \(FileName.hex(id)) is gone and cannot be bound again: \(error)")
        }
        if !drain.keepIfWaiting(frames) && !drain.handsOverInChunks(&frames) { hand(frames) }
        return bound
    }
}
