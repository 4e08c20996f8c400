import Foundation
import Synchronization

/// What the receive thread does to keep its listener reachable: once a second it puts the socket file back if it
/// was removed or replaced, binds a failed socket anew, keeps a wake socket for a wait in a read, and has the sink
/// keep this process's registry entry.
extension Listener {
    /// Once a second: puts the socket file back if it was removed or replaced, tries again for a wake socket
    /// if there is none, and has the sink keep this process's registry entry.
    func keepHouse(_ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule) {
        keepSocketFile(inbox, force: false, &drain, &schedule)
        if !hasWakeSocket { connectWakeSocket() }
        sink.keepHouse(for: self)
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
    /// socket after the round's look at the bell: one more is owed.
    func keepSocketFile(_ inbox: any Inbox, force: Bool, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule) {
        let expected = socketFile.withLock { $0 }
        guard force || currentSocketFile() != expected || expected == nil else { return }
        // A container moved or removed as a whole is the endpoint's to report; there is nothing to bind in.
        guard container.isAtItsPath else { return }
        InjectedFault.rebound()
        var frames: [Frame] = []
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
        } catch {
            sink.warn("socket file of listener \(FileName.hex(id)) is gone and cannot be bound again: \(error)")
        }
        if !drain.keepIfWaiting(frames) { hand(frames) }
    }
}
