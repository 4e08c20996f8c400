// The floor: a raw AF_UNIX socket between two processes, of the type one of Wormhole's transports uses,
// carrying the same number of bytes with no registry and no codec. One for each transport:
//
// - SOCK_SEQPACKET: a connection, as a Wormhole poster keeps to each sequenced-packet listener.
// - SOCK_DGRAM: the peer's one bound socket, which it does not connect, so that what is sent to it queues as
//   posts to a datagram listener do (on Linux, up to net.unix.max_dgram_qlen datagrams); the sender binds a
//   socket of its own for the answers and connects it to the peer. Its sends block while that queue is full,
//   where Wormhole's would spool.
//
// A message is a 20-byte header (kind, total, stamp, payload size) and the payload, sent in pieces of at most
// 64 KiB, the largest a default socket buffer takes whole.
//
// Polled (`polled`, for sequenced packets): each side waits in poll(2) before each read, on three descriptors as a
// Wormhole listener does (its wake pipe, its listening socket, a poster's connection), then reads without
// waiting. What that costs over a read that waits is the part of Wormhole's cost its wait takes.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Wormhole

// The C calls under names of their own: inside the types below, `bind`, `connect` and `send` are their methods.
private func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { bind(fd, address, length) }
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { connect(fd, address, length) }
private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int { send(fd, bytes, count, flags) }

final class RawSocket: Mechanism {
    let socketType: Transport
    var name: String { "raw AF_UNIX \(socketType)" }
    var label: String { "raw \(socketType) socket" }
    var transport: Transport? { socketType }
    let slowness = 1
    private let fd: Int32
    private let peer: Process
    /// Set when each read waits in poll(2) first, as a Wormhole listener's does.
    private let polled: Bool
    private static let headerSize = 20
    private static let pieceSize = 64 * 1024
    private static let noSignal = Int32(MSG_NOSIGNAL)

    private enum Kind: UInt8 {
        case ping = 0x50, stamp = 0x53, flood = 0x46
    }

    init(folder: String, transport: Transport, polled: Bool = false) throws {
        socketType = transport
        // A datagram peer waits in its read, as a Wormhole datagram listener does: polled applies to connections.
        self.polled = polled && transport == .sequencedPacket
        let path = folder + "/raw-\(transport)-peer.socket"
        peer = try spawnSelf(["raw-peer", "--path", path, "--transport", transport.rawValue] + (polled ? ["--polled"] : []))
        guard let fd = Self.connect(path: path, transport: transport) else { throw BenchError("the raw \(transport) peer did not start") }
        self.fd = fd
    }

    deinit {
        close(fd)
        stopProcess(peer)
    }

    /// Stops the peer and waits for it, so that its CPU time counts in this process's children.
    func finish() {
        stopProcess(peer)
        peer.waitUntilExit()
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        return address
    }

    private static func makeSocket(_ transport: Transport) -> Int32 {
        let type = transport == .datagram ? SOCK_DGRAM : SOCK_SEQPACKET
        #if canImport(Glibc)
        return socket(AF_UNIX, Int32(type.rawValue), 0)
        #else
        return socket(AF_UNIX, type, 0)
        #endif
    }

    private static func bind(_ fd: Int32, path: String) -> Bool {
        var address = address(path)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// A socket connected to the peer at `path`, once it is there. A datagram socket is first bound at
    /// `path` + ".client", where the peer sends its answers.
    static func connect(path: String, transport: Transport) -> Int32? {
        let fd = makeSocket(transport)
        if transport == .datagram {
            unlink(path + ".client")
            guard bind(fd, path: path + ".client") else {
                close(fd)
                return nil
            }
        }
        var address = address(path)
        for _ in 0..<1000 {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 { return fd }
            usleep(10_000)
        }
        close(fd)
        return nil
    }

    /// The message's pieces: the header and payload, cut at 64 KiB.
    private static func pieces(_ kind: Kind, total: Int, stamp: UInt64, payload: [UInt8]) -> [[UInt8]] {
        var message = [kind.rawValue, 0, 0, 0]
        message += littleEndianBytes(UInt64(total)).prefix(4)
        message += littleEndianBytes(stamp)
        message += littleEndianBytes(UInt64(payload.count)).prefix(4)
        message += payload
        return stride(from: 0, to: message.count, by: pieceSize).map { Array(message[$0..<min(message.count, $0 + pieceSize)]) }
    }

    /// One-way latencies as an app that waits for an answer sees them: the main thread sends the ping and waits on a
    /// semaphore that a receive thread of this process signals when the pong came. Single-piece payloads only;
    /// fewer than `rounds` if a pong did not come within 10 s.
    func waitingPingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        let pieces = Self.pieces(.ping, total: 0, stamp: 0, payload: payload.bytes)
        guard pieces.count == 1 else { return [] }
        let answered = DispatchSemaphore(value: 0)
        let fd = fd
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: Self.pieceSize)
            for _ in 0..<rounds {
                guard buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 else { break }
                answered.signal()
            }
        }
        reader.start()
        var samples: [UInt64] = []
        samples.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            transmit(pieces)
            guard answered.wait(timeout: .now() + 10) == .success else { break }
            samples.append((monotonicNanoseconds() - start) / 2)
        }
        return samples
    }

    private func transmit(_ pieces: [[UInt8]]) {
        for piece in pieces { _ = piece.withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count, Self.noSignal) } }
    }

    /// Blocks for the peer's next reply; nil when it went away.
    private func reply() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer.prefix(count)) : nil
    }

    func pingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        let pieces = Self.pieces(.ping, total: 0, stamp: 0, payload: payload.bytes)
        let size = pieces.reduce(0) { $0 + $1.count }
        var buffer = [UInt8](repeating: 0, count: Self.pieceSize)
        var samples: [UInt64] = []
        let wait = polled ? PollBeforeRead(fd, besides: nil) : nil
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            if pieces.count == 1 {
                // One piece: a blocking send and a blocking receive, as a client of a socket writes it.
                transmit(pieces)
                guard wait?.wait() ?? true,
                    buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, wait == nil ? 0 : Int32(MSG_DONTWAIT)) }) > 0
                else { return samples }
                samples.append((monotonicNanoseconds() - start) / 2)
                continue
            }
            // Several pieces: sends and receives at once, so that neither side fills the other's buffer while both write.
            var sent = 0, received = 0
            while received < size {
                var poller = pollfd(fd: fd, events: Int16(POLLIN | (sent < pieces.count ? POLLOUT : 0)), revents: 0)
                guard poll(&poller, 1, 10_000) > 0 else { return samples }
                if sent < pieces.count, poller.revents & Int16(POLLOUT) != 0 {
                    let result = pieces[sent].withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count, Self.noSignal | Int32(MSG_DONTWAIT)) }
                    if result > 0 { sent += 1 }
                }
                if poller.revents & Int16(POLLIN) != 0 {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if count > 0 { received += count }
                }
            }
            samples.append((monotonicNanoseconds() - start) / 2)
        }
        return samples
    }

    func stamped(_ payload: Payload, count: Int, interval: UInt64) -> Percentiles? {
        paced(count, every: interval) {
            transmit(Self.pieces(.stamp, total: count, stamp: monotonicNanoseconds(), payload: payload.bytes))
        }
        return reply().flatMap { Percentiles(bytes: $0, count: count) }
    }

    func flood(_ payload: Payload, count: Int) -> Double? {
        let pieces = Self.pieces(.flood, total: count, stamp: 0, payload: payload.bytes)
        let start = monotonicNanoseconds()
        for _ in 0..<count { transmit(pieces) }
        guard reply() != nil else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    // MARK: The other side

    /// The peer: echoes pings piece by piece, collects stamps and answers with their percentiles, counts
    /// floods and answers the last with its peak memory. On a datagram socket it answers whoever sent last,
    /// without connecting, so that senders' datagrams queue as they do at a Wormhole datagram listener.
    static func peer(path: String, transport: Transport, polled: Bool) -> Never {
        let listener = makeSocket(transport)
        guard bind(listener, path: path) else { exit(1) }
        let connection: Int32
        if transport == .datagram {
            connection = listener
        } else {
            guard listen(listener, 8) == 0 else { exit(1) }
            connection = accept(listener, nil, nil)
        }
        var sender = sockaddr_un()
        var senderLength = socklen_t(0)
        func answer(_ bytes: UnsafeRawBufferPointer) {
            if transport == .datagram {
                _ = withUnsafePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(connection, bytes.baseAddress, bytes.count, noSignal, $0, senderLength)
                    }
                }
            } else {
                _ = systemSend(connection, bytes.baseAddress, bytes.count, noSignal)
            }
        }
        var buffer = [UInt8](repeating: 0, count: pieceSize)
        var remaining = 0
        var kind = Kind.ping
        var total = 0, stamp: UInt64 = 0
        var flooded = 0
        var collector = StampCollector()
        let wait = polled && transport != .datagram ? PollBeforeRead(connection, besides: listener) : nil
        let flags = wait == nil ? 0 : Int32(MSG_DONTWAIT)
        while true {
            senderLength = socklen_t(MemoryLayout<sockaddr_un>.size)
            if let ready = wait?.wait(), !ready { exit(1) }
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(connection, bytes.baseAddress, bytes.count, flags, $0, &senderLength)
                    }
                }
            }
            if count <= 0 { exit(0) }
            if remaining == 0 {
                guard count >= headerSize, let parsed = Kind(rawValue: buffer[0]) else { continue }
                kind = parsed
                total = Int(littleEndianValue(buffer[4..<8]))
                stamp = littleEndianValue(buffer[8..<16])
                remaining = headerSize + Int(littleEndianValue(buffer[16..<20]))
            }
            remaining -= count
            if kind == .ping {
                buffer.withUnsafeBytes { answer(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            }
            guard remaining <= 0 else { continue }
            remaining = 0
            switch kind {
            case .ping:
                break
            case .stamp:
                if let result = collector.add(stamp: stamp, total: total) {
                    result.bytes.withUnsafeBytes { answer($0) }
                }
            case .flood:
                flooded += 1
                if flooded == total {
                    flooded = 0
                    littleEndianBytes(UInt64(peakResidentKiB())).withUnsafeBytes { answer($0) }
                }
            }
        }
    }

    /// In a fan-out child: starts eight peers and sends each message to all of them.
    static func fanOut(_ payload: Payload, count: Int, folder: String, transport: Transport) throws -> FanOutResult? {
        var sockets: [Int32] = []
        var peers: [Process] = []
        defer {
            sockets.forEach { close($0) }
            peers.forEach(stopProcess)
        }
        for index in 0..<8 {
            let path = folder + "/raw-sink-\(index).socket"
            peers.append(try spawnSelf(["raw-peer", "--path", path, "--transport", transport.rawValue]))
            guard let fd = connect(path: path, transport: transport) else { return nil }
            sockets.append(fd)
        }
        let pieces = Self.pieces(.flood, total: count, stamp: 0, payload: payload.bytes)
        let start = monotonicNanoseconds()
        for _ in 0..<count {
            for fd in sockets {
                for piece in pieces { _ = piece.withUnsafeBytes { systemSend(fd, $0.baseAddress, $0.count, noSignal) } }
            }
        }
        var largest = 0
        for fd in sockets {
            var reply = [UInt8](repeating: 0, count: 16)
            guard reply.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) == 8 else { return nil }
            largest = max(largest, Int(littleEndianValue(reply)))
        }
        let rate = Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
        return FanOutResult(rate: rate, posterKiB: peakResidentKiB(), sinkKiB: largest)
    }
}

/// A wait in poll(2) before a read, on as many descriptors as a Wormhole listener's receive thread waits on with
/// one poster connected: a pipe of its own (its wake pipe), `besides` (a listening socket; when nil, the pipe's
/// write end, which never reads as ready), and the connection.
final class PollBeforeRead {
    private var descriptors: [pollfd]
    private var ends: [Int32] = [-1, -1]

    init(_ connection: Int32, besides other: Int32?) {
        if pipe(&ends) != 0 { ends = [-1, -1] }
        descriptors = [ends[0], other ?? ends[1], connection].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    }

    deinit { ends.filter { $0 >= 0 }.forEach { close($0) } }

    /// Waits until the connection is ready to read (or has ended); false when the wait failed. Another descriptor
    /// found ready, or a wait a signal broke, waits again.
    func wait() -> Bool {
        let count = nfds_t(descriptors.count)
        while true {
            let result = descriptors.withUnsafeMutableBufferPointer { poll($0.baseAddress, count, -1) }
            if result < 0 && errno != EINTR { return false }
            if result > 0, let connection = descriptors.last, connection.revents != 0 { return true }
        }
    }
}
