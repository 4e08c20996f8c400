// The one place that reads the errno of a socket call and says what it means about the listener at the other
// end. Linux and Darwin say the same things with different values: a full datagram socket is EAGAIN on Linux
// and ENOBUFS on Darwin; a connected datagram sender whose receiver closed gets ECONNREFUSED then ENOTCONN on
// Linux, ECONNRESET then EDESTADDRREQ on Darwin.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a failed `connect` or `send` says about the listener it was aimed at.
package enum PeerState: Equatable, Sendable {
    /// Alive, but it cannot take this message now: its buffer or backlog is full (`EAGAIN`, `EWOULDBLOCK`,
    /// `ENOBUFS`), or the message is larger than the socket takes at once (`EMSGSIZE`). The message is spooled.
    case busy
    /// Nobody listens there: no socket file (`ENOENT`), nothing bound to it (`ECONNREFUSED`), or the peer of a
    /// connection closed (`ECONNRESET`, `EPIPE`, `ENOTCONN`, `EDESTADDRREQ`).
    case gone
    /// This socket to it went bad, though its listener may live (`EINVAL`: what xnu returns for a socket that was
    /// made defunct, or shut down under it). The message is spooled, and the next one connects anew; only a
    /// refused connection says a listener is gone.
    case unusable
    /// A live socket of the other transport is bound there (`EPROTOTYPE`): its listener restarted with another
    /// transport, and the registry is about to say so. The message is spooled.
    case otherTransport
    /// Anything else: not a statement about the listener.
    case failed

    init(errno: CInt?) {
        switch errno {
        case EAGAIN?, EWOULDBLOCK?, ENOBUFS?, EMSGSIZE?: self = .busy
        case ECONNREFUSED?, ENOENT?, ECONNRESET?, EPIPE?, ENOTCONN?, EDESTADDRREQ?: self = .gone
        case EPROTOTYPE?: self = .otherTransport
        case EINVAL?: self = .unusable
        default: self = .failed
        }
    }

    /// Whether a listener is there: busy, of the other transport, or with a socket gone bad, is alive.
    var isAlive: Bool { self == .busy || self == .otherTransport || self == .unusable }
}

extension WormholeError {
    /// What this error of a socket call says about the listener at the other end.
    package var peerState: PeerState { PeerState(errno: errno) }
}
