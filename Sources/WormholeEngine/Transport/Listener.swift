import Foundation
import Synchronization

/// What receives a process's notifications in one container: a socket of its transport in `listeners/`, its spool
/// folder in `spool/`, and a thread of its own (``ReceiveThread``, running ``run()`` in Listener+Receiving.swift)
/// that reads both and hands frames over in order.
final class Listener: Sendable {
    let id: UInt64
    /// Whether it lives and dies with its process, or is a durable identity's.
    let identity: Identity
    let transport: SocketKind
    let container: Container
    /// The sockets posters reach, until the receive thread takes them.
    let inbox: Mutex<(any Inbox)?>
    /// The socket file's identity, to notice when it is removed or replaced.
    let socketFile = Mutex<FileIdentity?>(nil)
    let spool: SpoolFolder
    /// Where the receive thread hands what it reads; not kept alive by the listener.
    let sink: SinkReference
    /// The receive thread, its wake pipe and its lifecycle.
    let thread: ReceiveThread
    /// What it has read and its observers have not yet run: past its bound, the receive thread reads no more.
    let backlog = DeliveryBacklog()
    /// The receive threads of durable identities this process stopped and that have not ended yet, by container
    /// and identity: a listener that claims one of them waits for its thread, which may still be handing over
    /// the identity's spool.
    private static let ending = Mutex<[String: ReceiveThread]>([:])

    private static func endingKey(_ identity: String, _ container: Container) -> String {
        container.listenersPath + "\u{0}" + identity
    }

    /// Opens the listener's spool folder and a socket of `transport`. A durable listener (`identity` not nil)
    /// claims its identity's socket, and reuses its spool folder.
    /// - Throws: ``WormholeError/Code/identityInUse`` when a live process already listens as `identity`.
    init(
        container: Container, identity: Identity, transport: SocketKind, sink: any ListenerSink
    ) throws(WormholeError) {
        self.identity = identity
        id = identity.makeListenerID()
        self.container = container
        self.transport = transport
        let sink = SinkReference(sink)
        self.sink = sink
        if let identity = identity.clientIdentifier, let previous = Self.ending.withLock({ $0[Self.endingKey(identity, container)] }) {
            guard previous.ends(within: Limits.endingListenerWait) else {
                throw WormholeError(
                    .identityInUse, "client identifier \"\(identity)\" is still in use by a listener of this process that is ending")
            }
        }
        spool = try SpoolFolder(listener: id, in: container, create: true)
        let bound: OwnedDescriptor
        do throws(WormholeError) {
            bound = try Self.bind(id, identity: identity, transport: transport, in: container)
        } catch {
            if !identity.isDurable { SpoolFolder.remove(listener: id, in: container) }
            throw error
        }
        do throws(WormholeError) {
            thread = try ReceiveThread()
        } catch {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
            throw error
        }
        inbox = Mutex(transport.makeInbox(bound, reader: MessageReader(
            transport: transport, dropped: { sink.dropped($0, $1) }, warning: { sink.warn($0) })))
        socketFile.withLock { $0 = currentSocketFile() }
        backlog.onRoom { [thread] in thread.wake() }
    }

    /// The identity of the file at this listener's socket name now.
    func currentSocketFile() -> FileIdentity? {
        try? Sys.status(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor, followLinks: false).identity
    }

    /// Binds the listener's socket: an ephemeral one under its fresh random name, a durable one by claiming its
    /// identity's name.
    static func bind(
        _ id: UInt64, identity: Identity, transport: SocketKind, in container: Container
    ) throws(WormholeError) -> OwnedDescriptor {
        let name = RegistryEntry.socketName(id)
        guard let identity = identity.clientIdentifier else {
            try? Sys.removeFile(name, relativeTo: container.listenersDescriptor)
            return try UnixSocket.bind(
                transport, directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name)
        }
        return try claim(identity, name: name, transport: transport, in: container)
    }

    /// Claims a durable identity's socket name without a lock: binds a socket under a temporary name and links
    /// it into place, which only one process can do. A socket already there that nobody listens on is moved
    /// aside first; if what was moved turns out to be alive (another process claimed it meanwhile), it is put
    /// back and the identity is in use.
    private static func claim(
        _ identity: String, name: String, transport: SocketKind, in container: Container
    ) throws(WormholeError) -> OwnedDescriptor {
        let directory = container.listenersDescriptor, path = container.listenersPath
        let temporary = ".claim-" + FileName.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
        let socket = try UnixSocket.bind(transport, directory: directory, directoryPath: path, name: temporary)
        defer { try? Sys.removeFile(temporary, relativeTo: directory) }
        let inUse = WormholeError(.identityInUse, "client identifier \"\(identity)\" is in use by another live process")
        for _ in 0..<8 {
            do throws(WormholeError) {
                try Sys.link(temporary, name, in: directory)
                StopPoint.reached("identity.claim")
                return socket
            } catch where error.systemErrno == .fileExists {
            }
            if isListening(name, transport, in: container) { throw inUse }
            let aside = ".stale-" + FileName.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
            do throws(WormholeError) {
                try Sys.renameFile(name, aside, in: directory)
            } catch {
                continue
            }
            if isListening(aside, transport, in: container) {
                try? Sys.link(aside, name, in: directory)
                try? Sys.removeFile(aside, relativeTo: directory)
                throw inUse
            }
            try? Sys.removeFile(aside, relativeTo: directory)
        }
        throw WormholeError(.identityInUse, "client identifier \"\(identity)\" could not be claimed: others keep claiming it")
    }

    /// Whether a process may listen on the socket `name`: a stopped one, one of the other transport, and one
    /// that cannot be probed now (this process is out of descriptors) count, so that an identity is never taken
    /// from a live process.
    private static func isListening(
        _ name: String, _ transport: SocketKind, in container: Container
    ) -> Bool {
        ListenerProbe.probe(name, transport, in: container) != .gone
    }

    /// An observer is being added in this process: a durable listener whose spool holds something reads nothing
    /// for a while (``ReceiveThread/observerAdding(settling:)``).
    func observerAdding() {
        guard identity.isDurable else { return }
        thread.observerAdding(settling: spool.holdsAnything())
    }

    /// An observer was added in this process: a durable listener offers what its spool holds to the observers
    /// again, once start-up code has had the time to add those that follow (``ReceiveThread/observerAdded(settling:)``).
    func observerAdded() {
        guard identity.isDurable else { return }
        thread.observerAdded(settling: spool.holdsAnything())
    }

    /// Has a durable listener that waits for observers hand its spool over now.
    func handOverNow() {
        guard identity.isDurable else { return }
        thread.handOverNow()
    }

    /// Runs `work` on the receive thread, after what it is doing now.
    func perform(_ work: @escaping @Sendable () -> Void) {
        thread.perform(work)
    }

    /// Starts the receive thread.
    func start() {
        thread.start(named: "Wormhole listener") { [self] in
            run()
            // The sockets closed as `run` returned; a socket file bound anew meanwhile goes too.
            removeSocketFile()
            // A durable listener's spool stays, to collect what is posted until its identity runs again.
            if !identity.isDurable { SpoolFolder.remove(listener: id, in: container) }
        } ended: { [self] in
            if let identity = identity.clientIdentifier {
                let key = Self.endingKey(identity, container)
                Self.ending.withLock { ending in
                    if ending[key] === thread { ending[key] = nil }
                }
            }
        }
    }

    /// Stops the listener: removes an ephemeral listener's socket file at once, so posters find it gone (a durable
    /// one's goes as its thread ends), and tells the receive thread to end. The thread finishes what it is doing
    /// (a batch it hands over included, so that a durable spool keeps nothing already handed over), then closes
    /// its sockets and wake pipe and removes an ephemeral listener's spool. Waits for that, at most
    /// ``Limits/stopWait``, but never while the thread runs observers' code (which may be waiting for the
    /// caller): then the thread ends on its own.
    func stop() {
        guard thread.requestStop() else { return }
        if let identity = identity.clientIdentifier {
            // A durable identity's socket stays until the thread ends: while it hands over the identity's spool,
            // the identity is still in use, and no other process may claim it.
            let key = Self.endingKey(identity, container)
            Self.ending.withLock { $0[key] = thread }
            // Ended already (it saw the stop first): its own removal of the entry came before this one.
            if thread.hasEnded {
                Self.ending.withLock { ending in
                    if ending[key] === thread { ending[key] = nil }
                }
            }
        } else {
            removeSocketFile()
        }
        thread.waitForEnd(within: Limits.stopWait)
    }

    /// A fresh socket for a listener whose socket failed, put in place of its own without the name going missing
    /// for a moment (a poster that found no socket would take the listener for gone): bound under a temporary
    /// name (a `.claim-` one, which housekeeping removes if this process dies first), then renamed over this
    /// listener's own file, or linked into place where there is none.
    /// - Throws: ``WormholeError/Code/identityInUse`` when the name is another's now.
    func bindAnew() throws(WormholeError) -> OwnedDescriptor {
        let directory = container.listenersDescriptor, name = RegistryEntry.socketName(id)
        let temporary = ".claim-" + FileName.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
        let socket = try UnixSocket.bind(transport, directory: directory, directoryPath: container.listenersPath, name: temporary)
        defer { try? Sys.removeFile(temporary, relativeTo: directory) }
        let current = currentSocketFile()
        if current == nil {
            try Sys.link(temporary, name, in: directory)
        } else if current == socketFile.withLock({ $0 }) {
            try Sys.renameFile(temporary, name, in: directory)
        } else {
            throw WormholeError(.identityInUse, "socket file of listener \(FileName.hex(id)) is another's now")
        }
        return socket
    }

    /// Removes the socket file, if it is still this listener's own: a durable identity's name may already be
    /// another process's.
    func removeSocketFile() {
        if currentSocketFile() == socketFile.withLock({ $0 }) {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
        }
    }

    /// Removes a gone listener's socket file and spool folder; a missing one is not an error.
    static func removeFiles(of listener: UInt64, in container: Container) {
        try? Sys.removeFile(RegistryEntry.socketName(listener), relativeTo: container.listenersDescriptor)
        SpoolFolder.remove(listener: listener, in: container)
    }
}
