#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A process's message-port server in one container: a listening socket in `listeners/`, its spool in
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

    /// The most connections a listener keeps; more are closed at once, and their posters spool instead.
    static let maximumConnections = 1000

    let id: UInt64
    /// The client identifier of a durable listener; nil for one that lives and dies with its process.
    let identity: String?
    private let container: Container
    private let socket: CInt
    private let wakeRead: CInt
    private let wakeWrite: CInt
    private let spool: Spool
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

    /// Opens the listener's socket and spool. A durable listener (`identity` not nil) claims its identity's
    /// socket, and reuses its spool.
    /// - Throws: ``WormholeError/Code/identityInUse`` when a live process already listens as `identity`.
    init(container: Container, identity: String?, handlers: Handlers) throws(WormholeError) {
        self.identity = identity
        id = identity.map(RegistryEntry.durableListener) ?? UInt64.random(in: 1...UInt64.max)
        self.container = container
        self.handlers = handlers
        if let identity {
            socket = try Self.claim(identity, id: id, in: container)
        } else {
            socket = try UnixSocket.listen(
                directory: container.listenersDescriptor, directoryPath: container.listenersPath,
                name: RegistryEntry.socketName(id)
            ).release()
        }
        do throws(WormholeError) {
            spool = try Spool(name: RegistryEntry.spoolName(id), in: container.spoolDescriptor, identity == nil ? .new : .reuse)
            (wakeRead, wakeWrite) = try Sys.makePipe()
        } catch {
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
            Sys.close(socket)
            throw error
        }
    }

    /// Binds a durable identity's socket, unless a live process listens on it. Holds the registry's lock for
    /// the moment it takes, so that two processes starting at once cannot both claim the identity.
    private static func claim(_ identity: String, id: UInt64, in container: Container) throws(WormholeError) -> CInt {
        let name = RegistryEntry.socketName(id)
        let lock = try Sys.open(Registry.lockName, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600, relativeTo: container.descriptor)
        return try Sys.withExclusiveLock(lock.rawValue) { () throws(WormholeError) -> CInt in
            do throws(WormholeError) {
                try UnixSocket.connect(
                    directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name
                ).close()
                throw WormholeError(.identityInUse, "client identifier \"\(identity)\" is in use by another live process")
            } catch where error.errno == ECONNREFUSED || error.errno == ENOENT {
                // Nobody listens: a socket file left by a process that died, or none at all.
                try? Sys.removeFile(name, relativeTo: container.listenersDescriptor)
            } catch where error.isWouldBlock {
                throw WormholeError(.identityInUse, "client identifier \"\(identity)\" is in use by a stopped process")
            }
            return try UnixSocket.listen(
                directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name
            ).release()
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
        if identity == nil {
            Self.removeFiles(of: id, in: container)
        } else {
            // A durable listener's spool stays, to collect what is posted until its identity runs again.
            try? Sys.removeFile(RegistryEntry.socketName(id), relativeTo: container.listenersDescriptor)
        }
        Sys.close(socket)
        Sys.close(wakeRead)
        Sys.close(wakeWrite)
    }

    /// Removes a listener's socket and spool files; a missing file is not an error.
    static func removeFiles(of listener: UInt64, in container: Container) {
        try? Sys.removeFile(RegistryEntry.socketName(listener), relativeTo: container.listenersDescriptor)
        try? Sys.removeFile(RegistryEntry.spoolName(listener), relativeTo: container.spoolDescriptor)
    }

    // MARK: The receive thread

    private func run() {
        var connections: [CInt] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Limits.maximumDirectFrameSize + 1, alignment: 8)
        defer {
            buffer.deallocate()
            connections.forEach(Sys.close)
        }
        var lastHousekeeping = DispatchTime.now()
        var events: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            events.removeAll(keepingCapacity: true)
            events.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            events.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
            for connection in connections {
                events.append(pollfd(fd: connection, events: Int16(POLLIN), revents: 0))
            }
            let ready = (try? Sys.waitForEvents(&events, timeoutMilliseconds: Limits.housekeepingInterval)) ?? 0
            if stopping.load(ordering: .acquiring) { break }

            var frames: [Frame] = []
            if ready > 0 {
                if events[0].revents != 0 {
                    drainWakePipe()
                    for work in pending.withLock({ work in defer { work = [] }; return work }) { work() }
                    if stopping.load(ordering: .acquiring) { break }
                }
                if events[1].revents != 0 { acceptAll(&connections) }
                var closed: [CInt] = []
                for event in events.dropFirst(2) where event.revents != 0 {
                    if !readMessages(event.fd, into: &frames, buffer: buffer, limit: 512) { closed.append(event.fd) }
                }
                close(closed, in: &connections)
                if !frames.isEmpty { handlers.frames(frames) }
                if stopping.load(ordering: .acquiring) { break }
            }
            if spool.currentSize() > heldBack.load(ordering: .relaxed) || recheck.exchange(false, ordering: .acquiringAndReleasing) {
                drainSpool(&connections, buffer: buffer)
            }
            let now = DispatchTime.now()
            if stopping.load(ordering: .acquiring) { break }
            if ready == 0 || now.uptimeNanoseconds - lastHousekeeping.uptimeNanoseconds > 1_000_000_000 {
                lastHousekeeping = now
                handlers.housekeeping()
            }
        }
    }

    /// Empties the spool. Under its lock, reads every connection dry first: a poster appends to the spool only
    /// after its earlier frames sit in its connection, so those come first. A durable listener leaves in its
    /// spool, in order, the frames nothing in its process observes yet.
    private func drainSpool(_ connections: inout [CInt], buffer: UnsafeMutableRawBufferPointer) {
        var direct: [Frame] = []
        var frames: [Frame] = []
        do throws(WormholeError) {
            try spool.withLock { (size) throws(WormholeError) in
                acceptAll(&connections)
                var closed: [CInt] = []
                for connection in connections {
                    if !readMessages(connection, into: &direct, buffer: buffer, limit: 100_000) { closed.append(connection) }
                }
                close(closed, in: &connections)
                let (records, damaged) = SpoolRecord.decodeAll(try spool.readAll(size: size))
                if damaged > 0 { handlers.dropped(damaged, "damaged stretches in spool \(spool.name) skipped") }
                var kept: [UInt8] = []
                for record in records {
                    do throws(WormholeError) {
                        let frame = try Frame(decoding: record)
                        guard frame.kind == .notification else { continue }
                        if identity != nil && handlers.holdBack(frame) {
                            kept += SpoolRecord.encode(record)
                        } else {
                            frames.append(frame)
                        }
                    } catch {
                        handlers.dropped(1, "spooled frame rejected: \(error)")
                    }
                }
                try spool.replace(with: kept)
                heldBack.store(kept.count, ordering: .relaxed)
            }
        } catch {
            Log.warning("cannot read spool \(spool.name): \(error)")
        }
        if !direct.isEmpty || !frames.isEmpty { handlers.frames(direct + frames) }
    }

    /// The bytes at the start of the spool that the last drain held back.
    private let heldBack = Atomic<Int>(0)

    private func acceptAll(_ connections: inout [CInt]) {
        while let connection = try? UnixSocket.accept(socket) {
            guard connections.count < Self.maximumConnections else {
                handlers.dropped(0, "listener has \(Self.maximumConnections) connections; closing a new one")
                connection.close()
                continue
            }
            connections.append(connection.release())
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

    private func close(_ closed: [CInt], in connections: inout [CInt]) {
        guard !closed.isEmpty else { return }
        connections.removeAll { closed.contains($0) }
        closed.forEach(Sys.close)
    }

    private func drainWakePipe() {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { scratch.deallocate() }
        while let n = try? Sys.readSome(wakeRead, into: scratch), n > 0 {}
    }
}
