// What each platform needs set on a socket. The Darwin branch is written from Apple's documentation and the
// xnu sources; this Linux machine cannot compile it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

enum SocketOptions {
    /// The socket type of `transport`.
    static func type(of transport: SocketKind) -> CInt {
        #if canImport(Glibc)
        switch transport {
        case .sequencedPacket: return CInt(SOCK_SEQPACKET.rawValue)
        case .datagram: return CInt(SOCK_DGRAM.rawValue)
        }
        #else
        // Darwin's AF_UNIX has no SOCK_SEQPACKET: socket() fails with EPROTONOSUPPORT, a clear error.
        switch transport {
        case .sequencedPacket: return SOCK_SEQPACKET
        case .datagram: return SOCK_DGRAM
        }
        #endif
    }

    /// The send buffer of a datagram socket bounds the largest datagram it sends (on Darwin 2,048 bytes by
    /// default, `net.local.dgram.maxdgram`): raised so that every frame the socket path takes fits. Set on Linux
    /// too (whose default is already larger), so that the same path runs here.
    static let datagramSendBuffer = Limits.maximumDirectFrameSize + 4096
    #if canImport(Darwin)
    /// The receive buffer of a Darwin datagram socket (4,096 bytes by default, `net.local.dgram.recvspace`)
    /// holds what posters sent until the listener reads it; a datagram that does not fit fails with ENOBUFS and
    /// is spooled. 1 MiB: eight of the largest frames, far under `kern.ipc.maxsockbuf` (8 MiB).
    static let datagramReceiveBuffer = 1 << 20
    #endif

    /// Stops posters' datagrams from reaching the bound datagram socket `fd`, leaving what they sent before
    /// readable: their sends then fail at once, and they spool or connect anew, so the socket can be read dry and
    /// closed without losing what is sent meanwhile. Linux: `shutdown(SHUT_RD)` (their sends fail with EPIPE).
    /// Darwin refuses to shut down a socket that is not connected (ENOTCONN), so its receive buffer is shrunk to
    /// one byte instead: xnu checks each datagram against the receiver's free space under the receiver's lock, so
    /// every later one fails (ENOBUFS), and what the buffer already holds stays. Returns false when it failed.
    static func sealDatagramSocket(_ fd: CInt) -> Bool {
        #if canImport(Darwin)
        return set(fd, SO_RCVBUF, 1)
        #else
        return Sys.shutdownReading(fd)
        #endif
    }


    /// Sets up a new socket. On Linux SOCK_CLOEXEC is given to socket() and MSG_NOSIGNAL to each send.
    /// - Throws: when a socket that would raise SIGPIPE cannot be made not to.
    static func prepare(_ fd: CInt, for transport: SocketKind) throws(WormholeError) {
        #if canImport(Darwin)
        // Darwin has no SOCK_CLOEXEC, and MSG_NOSIGNAL only since macOS 11 and iOS 14: both set per socket.
        guard set(fd, SO_NOSIGPIPE, 1) else { throw WormholeError(.system, "setsockopt SO_NOSIGPIPE", errno: currentErrno()) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if transport == .datagram { sizeSendBuffer(fd, asking: CInt(datagramSendBuffer), transport) }
        #else
        switch transport {
        case .sequencedPacket: sizeSendBuffer(fd, asking: Limits.sequencedPacketSendBuffer, transport)
        case .datagram: sizeSendBuffer(fd, asking: CInt(datagramSendBuffer), transport)
        }
        #endif
    }

    /// Sets up a socket that receives. On Linux a datagram receiver's queue is bounded by message count
    /// (`net.unix.max_dgram_qlen`), not by its buffer, so there is nothing to set.
    static func prepareReceiving(_ fd: CInt, for transport: SocketKind) {
        #if canImport(Darwin)
        if transport == .datagram {
            _ = set(fd, SO_RCVBUF, CInt(datagramReceiveBuffer))
            let granted = get(fd, SO_RCVBUF) ?? 0
            if granted < datagramReceiveBuffer {
                receiveBufferWarning.once {
                    "datagram receive buffer of \(granted) bytes granted, \(datagramReceiveBuffer) asked: posters spool sooner"
                }
            }
        }
        #endif
    }

    /// The largest frame a socket of `transport` sends whole: ``Limits/maximumDirectFrameSize``, or less when the
    /// system granted a smaller send buffer than asked (larger frames then go as shared frames or through the
    /// spool, rather than each failing a send first).
    static func directFrameLimit(_ transport: SocketKind) -> Int {
        switch transport {
        case .sequencedPacket: return grantedLimits.sequencedPacket.load(ordering: .relaxed)
        case .datagram: return grantedLimits.datagram.load(ordering: .relaxed)
        }
    }


    /// Asks for a send buffer of `asked` bytes and reads back what was granted; a grant too small for the
    /// largest direct frame lowers ``directFrameLimit(_:)`` for the process, said once.
    private static func sizeSendBuffer(_ fd: CInt, asking asked: CInt, _ transport: SocketKind) {
        let asked = InjectedFault.sendBufferAsk ?? asked
        let refusal = set(fd, SO_SNDBUF, asked) ? nil : currentErrno()
        // Refused, the socket keeps the buffer it had; unreadable, nothing is known, and nothing is lowered.
        guard let granted = get(fd, SO_SNDBUF) else { return }
        if let refusal {
            sendBufferRefusal.once { "setsockopt SO_SNDBUF \(asked) refused (errno \(refusal)); sockets keep \(granted) bytes" }
        }
        let limit = max(0, min(Limits.maximumDirectFrameSize, Int(granted) - Limits.sendBufferOverhead))
        guard limit < Limits.maximumDirectFrameSize else { return }
        let previous = transport == .datagram
            ? grantedLimits.datagram.min(limit, ordering: .relaxed).oldValue
            : grantedLimits.sequencedPacket.min(limit, ordering: .relaxed).oldValue
        if previous > limit {
            Log.warning("\(transport.rawValue) send buffer of \(granted) bytes granted, \(asked) asked: "
                + "frames over \(limit) bytes are shared or spooled")
        }
    }

    private final class GrantedLimits: Sendable {
        let sequencedPacket = Atomic(Limits.maximumDirectFrameSize)
        let datagram = Atomic(Limits.maximumDirectFrameSize)
    }
    private static let grantedLimits = GrantedLimits()
    private static let sendBufferRefusal = OnceWarning()
    #if canImport(Darwin)
    private static let receiveBufferWarning = OnceWarning()
    #endif

    /// Sets an integer option; false when the system refused it.
    private static func set(_ fd: CInt, _ option: CInt, _ value: CInt) -> Bool {
        var value = value
        return setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<CInt>.size)) == 0
    }

    /// An integer option's value, or nil when it cannot be read.
    private static func get(_ fd: CInt, _ option: CInt) -> CInt? {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        return getsockopt(fd, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
    }
}

/// A warning logged the first time only.
final class OnceWarning: Sendable {
    private let said = Atomic<Bool>(false)

    func once(_ message: () -> String) {
        if !said.exchange(true, ordering: .relaxed) { Log.warning(message()) }
    }
}
