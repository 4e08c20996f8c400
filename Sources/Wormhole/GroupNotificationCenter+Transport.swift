import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// The kind of local socket a process's listener receives on.
    ///
    /// Each listener records its transport in the registry, and posters speak whichever each listener has, so
    /// the processes of one container may use different ones. Every guarantee holds on both.
    public enum Transport: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// `AF_UNIX` `SOCK_SEQPACKET`: a connection per poster. The default on Linux. Apple platforms have no
        /// sequenced-packet local sockets.
        case sequencedPacket = "seqpacket"
        /// `AF_UNIX` `SOCK_DGRAM`: one socket per listener that every poster sends to. The default on Apple
        /// platforms, and available on Linux, where a datagram socket queues only `net.unix.max_dgram_qlen`
        /// messages (10 by default) before posters spool.
        case datagram

        /// The name `WORMHOLE_TRANSPORT` takes: `seqpacket` or `datagram`.
        public var description: String { rawValue }

        /// The name of the environment variable that chooses the transport of every center in a process whose
        /// ``Configuration`` names none.
        public static let environmentVariable = "WORMHOLE_TRANSPORT"

        /// The transport of this platform: sequenced packets on Linux, datagrams on Apple platforms.
        public static var platformDefault: Transport { Transport(SocketKind.platformDefault) }

        /// The transport a ``Configuration`` gets when it names none: the one `WORMHOLE_TRANSPORT` names, else
        /// ``platformDefault``. An unknown name is ignored with a warning.
        public static let processDefault: Transport = {
            guard let name = ProcessInfo.processInfo.environment[environmentVariable], !name.isEmpty else {
                return platformDefault
            }
            guard let named = Transport(rawValue: name) else {
                Log.warning("\(environmentVariable)=\(name) names no transport (seqpacket or datagram); using \(platformDefault)")
                return platformDefault
            }
            return named
        }()
    }
}

extension GroupNotificationCenter.Transport {
    /// The socket this transport uses.
    var socketKind: SocketKind {
        switch self {
        case .sequencedPacket: .sequencedPacket
        case .datagram: .datagram
        }
    }

    init(_ kind: SocketKind) {
        switch kind {
        case .sequencedPacket: self = .sequencedPacket
        case .datagram: self = .datagram
        }
    }
}
