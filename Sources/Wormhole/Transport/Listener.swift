#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A process's message-port server in one container: a listening socket in `listeners/`, its spool folder in
/// `spool/`, and a thread of its own that reads both and hands frames over in order.
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

    /// The most connections a listener keeps open. Past it, the connection read least recently is closed
    /// gracefully: no more sends are accepted on it (its poster connects again), and what it holds is read first.
    static let maximumConnections = 256

    let id: UInt64
    /// The client identifier of a durable listener; nil for one that lives and dies with its process.
    let identity: String?
    private let container: Container
    /// The listening socket; the receive thread replaces it when its file disappears.
    private let socket: Atomic<CInt>
    /// The socket file's identity, to notice when it is removed or replaced.
    private let socketFile = Mutex<FileIdentity?>(nil)
    private let wakeRead: CInt
    private let wakeWrite: CInt
    let spool: SpoolFolder
    private let handlers: Handlers
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Set when an observer was added: frames held back in a durable spool may now have one.
    private let recheck = Atomic<Bool>(true)
    /// Work handed to the receive thread from others: deliveries of this process's own posts.
    private let pending = Mutex<[@Sendable () -> Void]>([])
    /// The receive thread, once it runs.
    private let thread = Mutex<ObjectIdentifier?>(nil)
    /// Set when the receive thread itself stopped the listener: it closes the descriptors as it ends.
    private let closesOnExit = Atomic<Bool>(false)

    /// Opens the listener's spool folder and socket. A durable listener (`identity` not nil) claims its
    /// identity's socket, and reuses its spool folder.
    /// - Throws: ``WormholeError/Code/identityInUse`` when a live process already listens as `identity`.
    init(container: Container, identity: String?, handlers: Handlers) throws(WormholeError) {
        self.identity = identity
        id = identity.map(RegistryEntry.durableListener) ?? UInt64.random(in: 1...UInt64.max)
        self.container = container
        self.handlers = handlers
        spool = try SpoolFolder(listener: id, in: container, create: true)
        let bound: CInt
        do throws(WormholeError) {
            bound = try Self.bind(id, identity: identity, in: container).release()
        } catch {
            if identity == nil { SpoolFolder.remove(listener: id, in: container) }
            throw error
        }
        socket = Atomic(bound)
        do throws(WormholeError) {
            (wakeRead, wakeWrite) = try Sys.makePipe()
        } catch {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
            Sys.close(bound)
            throw error
        }
        socketFile.withLock { $0 = currentSocketFile() }
    }

    /// The identity of the file at this listener's socket name now.
    private func currentSocketFile() -> FileIdentity? {
        try? Sys.status(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor, followLinks: false).identity
    }

    /// Binds the listener's socket: an ephemeral one under its fresh random name, a durable one by claiming its
    /// identity's name.
    private static func bind(_ id: UInt64, identity: String?, in container: Container) throws(WormholeError) -> OwnedDescriptor {
        let name = RegistryEntry.socketName(id)
        guard let identity else {
            try? Sys.removeFile(name, relativeTo: container.listenersDescriptor)
            return try UnixSocket.listen(
                directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name)
        }
        return try claim(identity, name: name, in: container)
    }

    /// Claims a durable identity's socket name without a lock: binds a socket under a temporary name and links
    /// it into place, which only one process can do. A socket already there that nobody listens on is moved
    /// aside first; if what was moved turns out to be alive (another process claimed it meanwhile), it is put
    /// back and the identity is in use.
    private static func claim(_ identity: String, name: String, in container: Container) throws(WormholeError) -> OwnedDescriptor {
        let directory = container.listenersDescriptor, path = container.listenersPath
        let temporary = ".claim-" + RegistryEntry.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
        let socket = try UnixSocket.listen(directory: directory, directoryPath: path, name: temporary)
        defer { try? Sys.removeFile(temporary, relativeTo: directory) }
        let inUse = WormholeError(.identityInUse, "client identifier \"\(identity)\" is in use by another live process")
        for _ in 0..<8 {
            do throws(WormholeError) {
                try Sys.link(temporary, name, in: directory)
                StopPoint.reached("identity.claim")
                return socket
            } catch where error.errno == EEXIST {
            }
            if isListening(name, in: container) { throw inUse }
            let aside = ".stale-" + RegistryEntry.hex(UInt64.random(in: 1...UInt64.max)) + ".socket"
            do throws(WormholeError) {
                try Sys.renameFile(name, aside, in: directory)
            } catch {
                continue
            }
            if isListening(aside, in: container) {
                try? Sys.link(aside, name, in: directory)
                try? Sys.removeFile(aside, relativeTo: directory)
                throw inUse
            }
            try? Sys.removeFile(aside, relativeTo: directory)
        }
        throw WormholeError(.identityInUse, "client identifier \"\(identity)\" could not be claimed: others keep claiming it")
    }

    /// Whether a process listens on the socket `name` (a stopped one whose backlog is full counts).
    private static func isListening(_ name: String, in container: Container) -> Bool {
        do throws(WormholeError) {
            try UnixSocket.connect(directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name).close()
            return true
        } catch where error.isWouldBlock {
            return true
        } catch {
            return false
        }
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
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { try? Sys.writeSome(wakeWrite, $0) }
    }

    /// Starts the receive thread.
    func start() {
        let receiver = Thread { [self] in
            let current = ObjectIdentifier(Thread.current)
            thread.withLock { $0 = current }
            run()
            if closesOnExit.load(ordering: .acquiring) { closeAndRemove() }
            finished.signal()
        }
        receiver.name = "Wormhole listener"
        receiver.stackSize = 4 << 20
        receiver.start()
    }

    /// Stops the receive thread, waits for it (at most five seconds), and removes the socket and spool. When an
    /// observer's block on the receive thread is what stops it, the thread does the rest once the block returns.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if isReceiveThread {
            closesOnExit.store(true, ordering: .releasing)
            return
        }
        wake()
        _ = finished.wait(timeout: .now() + 5)
        closeAndRemove()
    }

    private func closeAndRemove() {
        // Only our own socket file: a durable identity's name may already be another process's.
        if currentSocketFile() == socketFile.withLock({ $0 }) {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
        }
        // A durable listener's spool stays, to collect what is posted until its identity runs again.
        if identity == nil { SpoolFolder.remove(listener: id, in: container) }
        Sys.close(socket.load(ordering: .acquiring))
        Sys.close(wakeRead)
        Sys.close(wakeWrite)
    }

    /// Removes a gone listener's socket file and spool folder; a missing one is not an error.
    static func removeFiles(of listener: UInt64, in container: Container) {
        try? Sys.removeFile(RegistryEntry.socketName(listener), relativeTo: container.listenersDescriptor)
        SpoolFolder.remove(listener: listener, in: container)
    }

    // MARK: The receive thread

    /// One accepted connection, and when it was last read.
    private struct Connection {
        var fd: CInt
        var lastRead: UInt64
    }

    private func run() {
        var connections: [Connection] = []
        var reader = SpoolReader(folder: spool)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Limits.maximumDirectFrameSize + 1, alignment: 8)
        defer {
            buffer.deallocate()
            connections.forEach { Sys.close($0.fd) }
        }
        var lastHousekeeping = DispatchTime.now().uptimeNanoseconds
        var lastBell: UInt64 = 0
        /// While accept fails for want of descriptors, the listening socket is left alone until then.
        var acceptPausedUntil: UInt64 = 0
        var events: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            let listening = socket.load(ordering: .relaxed)
            let accepting = DispatchTime.now().uptimeNanoseconds >= acceptPausedUntil
            events.removeAll(keepingCapacity: true)
            events.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            events.append(pollfd(fd: accepting ? listening : -1, events: Int16(POLLIN), revents: 0))
            for connection in connections {
                events.append(pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0))
            }
            let timeout = accepting ? Limits.housekeepingInterval : 100
            let ready = (try? Sys.waitForEvents(&events, timeoutMilliseconds: timeout)) ?? 0
            if stopping.load(ordering: .acquiring) { break }

            var frames: [Frame] = []
            if ready > 0 {
                if events[0].revents != 0 {
                    drainWakePipe()
                    for work in pending.withLock({ work in defer { work = [] }; return work }) { work() }
                    if stopping.load(ordering: .acquiring) { break }
                }
                if events[1].revents != 0 { _ = acceptAll(&connections, &frames, buffer, &acceptPausedUntil) }
                var closed: [CInt] = []
                let now = DispatchTime.now().uptimeNanoseconds
                for event in events.dropFirst(2) where event.revents != 0 {
                    if !readMessages(event.fd, into: &frames, buffer: buffer, limit: 512) { closed.append(event.fd) }
                    if let index = connections.firstIndex(where: { $0.fd == event.fd }) { connections[index].lastRead = now }
                }
                close(closed, in: &connections)
                if !frames.isEmpty { handlers.frames(frames) }
                if stopping.load(ordering: .acquiring) { break }
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let housekeepingDue = ready == 0 || now - lastHousekeeping > 1_000_000_000
            let bell = spool.bell.value
            let recheckHeld = recheck.exchange(false, ordering: .acquiringAndReleasing)
            if bell != lastBell || recheckHeld || housekeepingDue {
                lastBell = bell
                drainSpool(&connections, &reader, includingHeld: recheckHeld, buffer: buffer, &acceptPausedUntil)
            }
            if stopping.load(ordering: .acquiring) { break }
            if housekeepingDue {
                lastHousekeeping = now
                keepSocketFile(&connections, buffer: buffer)
                handlers.housekeeping()
            }
        }
    }

    /// Takes what posters spooled, then accepts every pending connection and reads every connection dry, and
    /// hands both over in the order posted (``SpoolReader/handOver(_:direct:_:)``). If a pending connection
    /// cannot be accepted now (no descriptors), the segments taken wait for the next round.
    private func drainSpool(
        _ connections: inout [Connection], _ reader: inout SpoolReader, includingHeld: Bool,
        buffer: UnsafeMutableRawBufferPointer, _ acceptPausedUntil: inout UInt64
    ) {
        let taken = reader.take(includingHeld: includingHeld)
        StopPoint.reached("spool.drain")
        var direct: [Frame] = []
        let accepted = acceptAll(&connections, &direct, buffer, &acceptPausedUntil)
        var closed: [CInt] = []
        for connection in connections {
            if !readMessages(connection.fd, into: &direct, buffer: buffer, limit: 100_000) { closed.append(connection.fd) }
        }
        close(closed, in: &connections)
        guard accepted else {
            if !direct.isEmpty { handlers.frames(direct) }
            return
        }
        let handlers = self.handlers
        reader.handOver(
            taken, direct: direct,
            SpoolReader.Handlers(
                deliver: { handlers.frames($0) },
                holdBack: { [identity] frame in identity != nil && handlers.holdBack(frame) },
                dropped: { handlers.dropped($0, $1) }))
    }

    /// Accepts every pending connection. Past ``maximumConnections``, or when the process is out of
    /// descriptors, closes the connections read least recently, gracefully (their frames go into `frames`).
    /// Returns false when connections may still be pending.
    private func acceptAll(
        _ connections: inout [Connection], _ frames: inout [Frame], _ buffer: UnsafeMutableRawBufferPointer,
        _ acceptPausedUntil: inout UInt64
    ) -> Bool {
        let listening = socket.load(ordering: .relaxed)
        while true {
            let accepted: OwnedDescriptor?
            do throws(WormholeError) {
                accepted = try UnixSocket.accept(listening)
            } catch where error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                // Out of descriptors: make room, and leave the listening socket alone for a moment rather than
                // spin on it.
                let room = max(1, connections.count / 8)
                closeLeastRecent(room, &connections, &frames, buffer)
                let now = DispatchTime.now().uptimeNanoseconds
                acceptPausedUntil = now + 100_000_000
                // Said at most every ten seconds: the condition can last.
                if now &- lastDescriptorWarning.load(ordering: .relaxed) > 10_000_000_000 {
                    lastDescriptorWarning.store(now, ordering: .relaxed)
                    handlers.dropped(0, "listener is out of descriptors (\(error)); closing idle connections and accepting more slowly")
                }
                return false
            } catch {
                handlers.dropped(0, "accept failed: \(error)")
                return false
            }
            guard let connection = accepted else { return true }
            if connections.count >= Self.maximumConnections { closeLeastRecent(1, &connections, &frames, buffer) }
            connections.append(Connection(fd: connection.release(), lastRead: DispatchTime.now().uptimeNanoseconds))
        }
    }

    private let lastDescriptorWarning = Atomic<UInt64>(0)

    /// Closes `count` connections, those read least recently, without losing what they hold: after
    /// `shutdown(SHUT_RD)` their posters' sends fail (and they connect again), and what was sent before is read.
    private func closeLeastRecent(
        _ count: Int, _ connections: inout [Connection], _ frames: inout [Frame], _ buffer: UnsafeMutableRawBufferPointer
    ) {
        connections.sort { $0.lastRead < $1.lastRead }
        for connection in connections.prefix(count) {
            Sys.shutdownReading(connection.fd)
            _ = readMessages(connection.fd, into: &frames, buffer: buffer, limit: 1_000_000)
            Sys.close(connection.fd)
        }
        connections.removeFirst(min(count, connections.count))
    }

    /// Puts the socket file back when it was removed or replaced (a cleaner of temporary files): binds a new
    /// listening socket under the name, and keeps the connections of the old one.
    private func keepSocketFile(_ connections: inout [Connection], buffer: UnsafeMutableRawBufferPointer) {
        let expected = socketFile.withLock { $0 }
        guard currentSocketFile() != expected || expected == nil else { return }
        // A container moved or removed as a whole is the endpoint's to report; there is nothing to bind in.
        guard container.isAtItsPath else { return }
        do throws(WormholeError) {
            let fresh: OwnedDescriptor
            if let identity {
                fresh = try Self.claim(identity, name: RegistryEntry.socketName(id), in: container)
            } else {
                fresh = try Self.bind(id, identity: nil, in: container)
            }
            var frames: [Frame] = []
            var paused: UInt64 = 0
            _ = acceptAll(&connections, &frames, buffer, &paused)
            if !frames.isEmpty { handlers.frames(frames) }
            let old = socket.exchange(fresh.release(), ordering: .acquiringAndReleasing)
            Sys.close(old)
            socketFile.withLock { $0 = currentSocketFile() }
            handlers.dropped(0, "socket file of listener \(RegistryEntry.hex(id)) was removed or replaced; bound it again")
        } catch {
            handlers.dropped(0, "socket file of listener \(RegistryEntry.hex(id)) is gone and cannot be bound again: \(error)")
        }
    }

    /// Reads up to `limit` messages from `fd`. Returns false when the peer closed the connection.
    private func readMessages(
        _ fd: CInt, into frames: inout [Frame], buffer: UnsafeMutableRawBufferPointer, limit: Int
    ) -> Bool {
        for _ in 0..<limit {
            let received: Int?
            do throws(WormholeError) {
                received = try UnixSocket.receive(fd, into: buffer)
            } catch {
                handlers.dropped(0, "connection failed: \(error)")
                return false
            }
            guard let length = received else { return true }
            guard length > 0 else { return false }
            guard length <= buffer.count - 1 else {
                handlers.dropped(1, "message of \(length) bytes is over the \(Limits.maximumDirectFrameSize)-byte limit")
                continue
            }
            do throws(WormholeError) {
                let frame = try Frame(decoding: Array(buffer[0..<length]))
                if frame.kind == .notification { frames.append(frame) }
            } catch {
                handlers.dropped(1, "message rejected: \(error)")
            }
        }
        return true
    }

    private func close(_ closed: [CInt], in connections: inout [Connection]) {
        guard !closed.isEmpty else { return }
        connections.removeAll { closed.contains($0.fd) }
        closed.forEach(Sys.close)
    }

    private func drainWakePipe() {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { scratch.deallocate() }
        while let n = try? Sys.readSome(wakeRead, into: scratch), n > 0 {}
    }
}
