#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A process's message-port server in one container: a socket of its transport in `listeners/`, its spool
/// folder in `spool/`, and a thread of its own (``run()``, in ReceiveLoop.swift) that reads both and hands
/// frames over in order.
final class Listener: Sendable {
    /// What the receive thread reports.
    struct Handlers: Sendable {
        var frames: @Sendable ([Frame]) -> Void
        var housekeeping: @Sendable () -> Void
        var dropped: @Sendable (_ count: Int, _ reason: String) -> Void
        /// For a durable listener: whether a spooled frame must stay in the spool because nothing in this
        /// process observes it yet.
        var holdBack: @Sendable (Frame) -> Bool = { _ in false }
    }

    let id: UInt64
    /// The client identifier of a durable listener; nil for one that lives and dies with its process.
    let identity: String?
    let transport: GroupNotificationCenter.Transport
    let container: Container
    /// The sockets posters reach, until the receive thread takes them.
    let inbox: Mutex<(any Inbox)?>
    /// The socket file's identity, to notice when it is removed or replaced.
    let socketFile = Mutex<FileIdentity?>(nil)
    let wakeRead: CInt
    private let wakeWrite: CInt
    let spool: SpoolFolder
    let handlers: Handlers
    let stopping = Atomic<Bool>(false)
    /// What it has read and its observers have not yet run: past its bound, the receive thread reads no more.
    let backlog = DeliveryBacklog()
    private let finished = DispatchSemaphore(value: 0)
    /// Set when an observer was added: frames held back in a durable spool may now have one.
    let recheck = Atomic<Bool>(true)
    /// Work handed to the receive thread from others: deliveries of this process's own posts.
    let pending = Mutex<[@Sendable () -> Void]>([])
    /// The receive thread, once it runs.
    private let thread = Mutex<ObjectIdentifier?>(nil)
    /// Set when an observer's block on the receive thread stopped the listener: the thread removes the files and
    /// closes the wake pipe as it ends.
    private let stoppedByItself = Atomic<Bool>(false)
    /// Set when the receive thread did not end in time: it closes the wake pipe as it ends.
    private let closesOnExit = Atomic<Bool>(false)

    /// Opens the listener's spool folder and a socket of `transport`. A durable listener (`identity` not nil)
    /// claims its identity's socket, and reuses its spool folder.
    /// - Throws: ``WormholeError/Code/identityInUse`` when a live process already listens as `identity`.
    init(
        container: Container, identity: String?, transport: GroupNotificationCenter.Transport, handlers: Handlers
    ) throws(WormholeError) {
        self.identity = identity
        id = identity.map(RegistryEntry.durableListener) ?? UInt64.random(in: 1...UInt64.max)
        self.container = container
        self.transport = transport
        self.handlers = handlers
        spool = try SpoolFolder(listener: id, in: container, create: true)
        let bound: OwnedDescriptor
        do throws(WormholeError) {
            bound = try Self.bind(id, identity: identity, transport: transport, in: container)
        } catch {
            if identity == nil { SpoolFolder.remove(listener: id, in: container) }
            throw error
        }
        do throws(WormholeError) {
            (wakeRead, wakeWrite) = try Sys.makePipe()
        } catch {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
            throw error
        }
        inbox = Mutex(transport.makeInbox(bound, reader: MessageReader(transport: transport, dropped: handlers.dropped)))
        socketFile.withLock { $0 = currentSocketFile() }
        backlog.onRoom { [weak self] in self?.wake() }
    }

    /// The identity of the file at this listener's socket name now.
    func currentSocketFile() -> FileIdentity? {
        try? Sys.status(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor, followLinks: false).identity
    }

    /// Binds the listener's socket: an ephemeral one under its fresh random name, a durable one by claiming its
    /// identity's name.
    static func bind(
        _ id: UInt64, identity: String?, transport: GroupNotificationCenter.Transport, in container: Container
    ) throws(WormholeError) -> OwnedDescriptor {
        let name = RegistryEntry.socketName(id)
        guard let identity else {
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
        _ identity: String, name: String, transport: GroupNotificationCenter.Transport, in container: Container
    ) throws(WormholeError) -> OwnedDescriptor {
        let directory = container.listenersDescriptor, path = container.listenersPath
        let temporary = ".claim-" + RegistryEntry.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
        let socket = try UnixSocket.bind(transport, directory: directory, directoryPath: path, name: temporary)
        defer { try? Sys.removeFile(temporary, relativeTo: directory) }
        let inUse = WormholeError(.identityInUse, "client identifier \"\(identity)\" is in use by another live process")
        for _ in 0..<8 {
            do throws(WormholeError) {
                try Sys.link(temporary, name, in: directory)
                StopPoint.reached("identity.claim")
                return socket
            } catch where error.errno == EEXIST {
            }
            if isListening(name, transport, in: container) { throw inUse }
            let aside = ".stale-" + RegistryEntry.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
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
        _ name: String, _ transport: GroupNotificationCenter.Transport, in container: Container
    ) -> Bool {
        ListenerProbe.probe(name, transport, in: container) != .gone
    }

    /// Asks the receive thread to offer held-back spooled frames to the observers again.
    func recheckHeldBack() {
        guard identity != nil else { return }
        recheck.store(true, ordering: .releasing)
        wake()
    }

    /// Runs `work` on the receive thread, after what it is doing now.
    func perform(_ work: @escaping @Sendable () -> Void) {
        pending.withLock { $0.append(work) }
        wake()
    }

    /// Whether the caller is the receive thread.
    private var isReceiveThread: Bool {
        let current = ObjectIdentifier(Thread.current)
        return thread.withLock { $0 == current }
    }

    private func wake() {
        guard !wakePipeClosed.load(ordering: .acquiring) else { return }
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { try? Sys.writeSome(wakeWrite, $0) }
    }

    /// Starts the receive thread.
    func start() {
        let receiver = Thread { [self] in
            let current = ObjectIdentifier(Thread.current)
            thread.withLock { $0 = current }
            run()
            let stoppedItself = stoppedByItself.load(ordering: .acquiring)
            if stoppedItself { removeFiles() }
            finished.signal()
            if stoppedItself || closesOnExit.load(ordering: .acquiring) { closeWakePipe() }
        }
        receiver.name = "Wormhole listener"
        receiver.stackSize = 4 << 20
        receiver.start()
    }

    /// Stops the receive thread, waits for it (at most five seconds), and removes the socket file and spool.
    /// The thread closes its sockets as it ends. When an observer's block on the receive thread is what stops it,
    /// or the thread does not end in time, it closes the wake pipe too once the block returns.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if isReceiveThread {
            stoppedByItself.store(true, ordering: .releasing)
            return
        }
        wake()
        let ended = finished.wait(timeout: .now() + 5) == .success
        removeFiles()
        if ended { closeWakePipe() } else { closesOnExit.store(true, ordering: .releasing) }
    }

    private func removeFiles() {
        // Only our own socket file: a durable identity's name may already be another process's.
        if currentSocketFile() == socketFile.withLock({ $0 }) {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
        }
        // A durable listener's spool stays, to collect what is posted until its identity runs again.
        if identity == nil { SpoolFolder.remove(listener: id, in: container) }
    }

    /// Closes the wake pipe once, whoever asks first.
    private func closeWakePipe() {
        guard !wakePipeClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Sys.close(wakeRead)
        Sys.close(wakeWrite)
    }

    private let wakePipeClosed = Atomic<Bool>(false)

    deinit {
        closeWakePipe()
    }

    /// Removes a gone listener's socket file and spool folder; a missing one is not an error.
    static func removeFiles(of listener: UInt64, in container: Container) {
        try? Sys.removeFile(RegistryEntry.socketName(listener), relativeTo: container.listenersDescriptor)
        SpoolFolder.remove(listener: listener, in: container)
    }
}
