// What each platform needs set on a socket: the shared part. What differs (the socket type, sealing a datagram
// socket, SIGPIPE and close-on-exec, a receive buffer) is in Linux/Linux.swift and Darwin/Darwin.swift.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

package enum SocketOptions {
    /// The send buffer of a datagram socket bounds the largest datagram it sends (on Darwin 2,048 bytes by
    /// default, `net.local.dgram.maxdgram`): raised so that every frame the socket path takes fits. Set on Linux
    /// too (whose default is already larger), so that the same path runs here.
    static let datagramSendBuffer = Limits.maximumDirectFrameSize + Limits.sendBufferOverhead

    /// The largest frame a socket of `transport` sends whole: ``Limits/maximumDirectFrameSize``, or less when the
    /// system granted a smaller send buffer than asked (larger frames then go as shared frames or through the
    /// spool, rather than each failing a send first).
    package static func directFrameLimit(_ transport: SocketKind) -> Int {
        switch transport {
        case .sequencedPacket: return grantedLimits.sequencedPacket.load(ordering: .relaxed)
        case .datagram: return grantedLimits.datagram.load(ordering: .relaxed)
        }
    }


    /// Asks for a send buffer of `asked` bytes and reads back what was granted; a grant too small for the
    /// largest direct frame lowers ``directFrameLimit(_:)`` for the process, said once.
    static func sizeSendBuffer(_ fd: CInt, asking asked: CInt, _ transport: SocketKind) {
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

    /// Lets a receive wait on `fd` (a listener's datagram socket): a read that passes `waiting` then blocks until a
    /// message comes, or as long as ``waitReceiving(_:milliseconds:)`` says; every other read of it still passes
    /// `MSG_DONTWAIT`. Returns false when the socket cannot be set so.
    package static func allowWaitingReceives(_ socket: Descriptor) -> Bool {
        let fd = socket.rawValue
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && (flags & O_NONBLOCK == 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0)
    }

    /// How long a receive that waits on `fd` waits at most (`SO_RCVTIMEO`): `milliseconds`, more than 0 (0 would
    /// be for ever). Returns false when the system refused it.
    package static func waitReceiving(_ socket: Descriptor, milliseconds: Int32) -> Bool {
        var limit = timeval()
        limit.tv_sec = .init(milliseconds / 1_000)
        limit.tv_usec = .init(milliseconds % 1_000 * 1_000)
        return milliseconds > 0
            && setsockopt(socket.rawValue, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size)) == 0
    }

    /// Sets an integer option; false when the system refused it.
    static func set(_ fd: CInt, _ option: CInt, _ value: CInt) -> Bool {
        var value = value
        return setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<CInt>.size)) == 0
    }

    /// An integer option's value, or nil when it cannot be read.
    static func get(_ fd: CInt, _ option: CInt) -> CInt? {
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
