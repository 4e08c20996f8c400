// What each platform needs set on a socket. The Darwin branch is written from Apple's documentation and the
// xnu sources; this Linux machine cannot compile it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SocketOptions {
    /// The socket type of `transport`.
    static func type(of transport: GroupNotificationCenter.Transport) -> CInt {
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

    #if canImport(Darwin)
    /// The send buffer of a Darwin datagram socket bounds the largest datagram it sends (2,048 bytes by
    /// default, `net.local.dgram.maxdgram`): raised so that every frame the socket path takes fits.
    static let datagramSendBuffer = Limits.maximumDirectFrameSize + 4096
    /// The receive buffer of a Darwin datagram socket (4,096 bytes by default, `net.local.dgram.recvspace`)
    /// holds what posters sent until the listener reads it; a datagram that does not fit fails with ENOBUFS and
    /// is spooled. 1 MiB: eight of the largest frames, far under `kern.ipc.maxsockbuf` (8 MiB).
    static let datagramReceiveBuffer = 1 << 20
    #endif

    /// Whether `shutdown(SHUT_RD)` on a bound datagram socket makes the sends of those connected to it fail
    /// (Linux: EPIPE). Darwin refuses to shut down a socket that is not connected (ENOTCONN) and changes nothing,
    /// so a datagram socket there cannot be closed without losing what is sent to it meanwhile.
    static var shutdownStopsDatagramSenders: Bool {
        #if canImport(Darwin)
        return false
        #else
        return true
        #endif
    }

    /// The send buffer of a poster's sequenced-packet connection, which is what bounds how many frames queue
    /// for a listener that has not read them yet (Linux charges a connected packet to its sender): 1 MiB asked,
    /// which Linux doubles for its bookkeeping, so about 2,700 small frames where the default 208 KiB holds 278.
    /// A poster faster than its listener then spools far less often; memory is used only while frames wait.
    static let sequencedPacketSendBuffer: CInt = 1 << 20

    /// Sets up a new socket. On Linux SOCK_CLOEXEC is given to socket() and MSG_NOSIGNAL to each send.
    static func prepare(_ fd: CInt, for transport: GroupNotificationCenter.Transport) {
        #if canImport(Darwin)
        // Darwin has no SOCK_CLOEXEC, and MSG_NOSIGNAL only since macOS 11 and iOS 14: both set per socket.
        set(fd, SO_NOSIGPIPE, 1)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if transport == .datagram { set(fd, SO_SNDBUF, CInt(datagramSendBuffer)) }
        #else
        if transport == .sequencedPacket { set(fd, SO_SNDBUF, sequencedPacketSendBuffer) }
        #endif
    }

    /// Sets up a socket that receives. On Linux a datagram receiver's queue is bounded by message count
    /// (`net.unix.max_dgram_qlen`), not by its buffer, so there is nothing to set.
    static func prepareReceiving(_ fd: CInt, for transport: GroupNotificationCenter.Transport) {
        #if canImport(Darwin)
        if transport == .datagram { set(fd, SO_RCVBUF, CInt(datagramReceiveBuffer)) }
        #endif
    }

    private static func set(_ fd: CInt, _ option: CInt, _ value: CInt) {
        var value = value
        _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<CInt>.size))
    }
}
