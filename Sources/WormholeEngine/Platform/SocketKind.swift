/// The kind of local socket a listener binds and its posters reach it by: what the API calls a transport
/// (``GroupNotificationCenter/Transport``), as the layers below the center know it.
package enum SocketKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `SOCK_SEQPACKET`: a connection per poster (Linux only).
    case sequencedPacket = "seqpacket"
    /// `SOCK_DGRAM`: one socket that every poster sends to.
    case datagram

    package var description: String { rawValue }
}
