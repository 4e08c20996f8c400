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
    }

    /// The most connections a listener keeps; more are closed at once, and their posters spool instead.
    static let maximumConnections = 1000

    let id: UInt64
    private let container: Container
    private let socket: CInt
    private let wakeRead: CInt
    private let wakeWrite: CInt
    private let spool: Spool
    private let handlers: Handlers
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(container: Container, handlers: Handlers) throws(WormholeError) {
        id = UInt64.random(in: 1...UInt64.max)
        self.container = container
        self.handlers = handlers
        spool = try Spool(name: RegistryEntry.spoolName(id), in: container.spoolDescriptor, create: true)
        do throws(WormholeError) {
            socket = try UnixSocket.listen(
                directory: container.listenersDescriptor, directoryPath: container.listenersPath,
                name: RegistryEntry.socketName(id)
            ).release()
        } catch {
            try? Sys.removeFile(RegistryEntry.spoolName(id), relativeTo: container.spoolDescriptor)
            throw error
        }
        (wakeRead, wakeWrite) = try Sys.makePipe()
    }

    /// Starts the receive thread.
    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "Wormhole listener"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Stops the receive thread, waits for it (at most five seconds), and removes the socket and spool.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { try? Sys.writeSome(wakeWrite, $0) }
        _ = finished.wait(timeout: .now() + 5)
        Self.removeFiles(of: id, in: container)
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
                if events[0].revents != 0 { drainWakePipe() }
                if events[1].revents != 0 { acceptAll(&connections) }
                var closed: [CInt] = []
                for event in events.dropFirst(2) where event.revents != 0 {
                    if !readMessages(event.fd, into: &frames, buffer: buffer, limit: 512) { closed.append(event.fd) }
                }
                close(closed, in: &connections)
                if !frames.isEmpty { handlers.frames(frames) }
            }
            if spool.currentSize() > 0 { drainSpool(&connections, buffer: buffer) }
            let now = DispatchTime.now()
            if ready == 0 || now.uptimeNanoseconds - lastHousekeeping.uptimeNanoseconds > 1_000_000_000 {
                lastHousekeeping = now
                handlers.housekeeping()
            }
        }
    }

    /// Empties the spool. Under its lock, reads every connection dry first: a poster appends to the spool only
    /// after its earlier frames sit in its connection, so those come first.
    private func drainSpool(_ connections: inout [CInt], buffer: UnsafeMutableRawBufferPointer) {
        var direct: [Frame] = []
        let taken: [UInt8]
        do throws(WormholeError) {
            taken = try spool.withLock { (size) throws(WormholeError) -> [UInt8] in
                acceptAll(&connections)
                var closed: [CInt] = []
                for connection in connections {
                    if !readMessages(connection, into: &direct, buffer: buffer, limit: 100_000) { closed.append(connection) }
                }
                close(closed, in: &connections)
                return try spool.takeAll(size: size)
            }
        } catch {
            Log.warning("cannot read spool \(spool.name): \(error)")
            if !direct.isEmpty { handlers.frames(direct) }
            return
        }
        let (records, damaged) = SpoolRecord.decodeAll(taken)
        if damaged > 0 { handlers.dropped(damaged, "damaged stretches in spool \(spool.name) skipped") }
        var frames = direct
        frames.reserveCapacity(direct.count + records.count)
        for record in records {
            do throws(WormholeError) {
                let frame = try Frame(decoding: record)
                if frame.kind == .notification { frames.append(frame) }
            } catch {
                handlers.dropped(1, "spooled frame rejected: \(error)")
            }
        }
        if !frames.isEmpty { handlers.frames(frames) }
    }

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
