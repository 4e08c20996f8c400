import Wormhole

/// One thing a ``WormholeRelay`` carries between the two devices, and which way.
///
/// ```swift
/// let routes: [RelayRoute] = [
///     .notifications(named: "cart.changed"),              // both ways
///     .notifications(prefixed: "workout.", .outgoing),    // from this device to the other only
///     .retained(named: "nowPlaying"),
///     .value(named: "unread"),
/// ]
/// ```
public struct RelayRoute: Sendable, Hashable {
    /// Which way a route carries.
    public enum Direction: String, Sendable, Hashable {
        /// Both ways.
        case both
        /// From this device's group to the other device's.
        case outgoing
        /// From the other device's group to this device's.
        case incoming

        var sends: Bool { self != .incoming }
        var receives: Bool { self != .outgoing }
    }

    /// What a route carries.
    public enum Kind: Sendable, Hashable {
        /// Each notification of a name: once to every matching observer on the other side, in each poster's order.
        case notifications(name: String)
        /// Each notification whose name starts with a prefix, as ``notifications(name:)``. Names Wormhole reserves
        /// (`wormhole.`) match only a prefix that itself starts with `wormhole.`.
        case notificationsPrefixed(String)
        /// The retained notification of a name: the latest, the same on both devices.
        case retained(name: String)
        /// A ``Wormhole/GroupValue``: the same value on both devices, the last written winning.
        case value(name: String)
        /// Requests for a name (``Wormhole/GroupNotificationCenter/request(name:object:userInfo:timeout:)``): one
        /// made on the sending side reaches the responders on the other, and the replies come back. The time left
        /// crosses as time left: what the request spent in the relays counts, what it spent in WatchConnectivity's
        /// hands does not. A relay that carries requests answers for the name in its group, so a request there
        /// waits for its timeout rather than failing with `noResponder`.
        case requests(name: String)
    }

    public var kind: Kind
    public var direction: Direction

    public init(_ kind: Kind, _ direction: Direction = .both) {
        self.kind = kind
        self.direction = direction
    }

    /// Each notification named `name`.
    public static func notifications(named name: String, _ direction: Direction = .both) -> RelayRoute {
        RelayRoute(.notifications(name: name), direction)
    }

    /// Each notification whose name starts with `prefix`.
    public static func notifications(prefixed prefix: String, _ direction: Direction = .both) -> RelayRoute {
        RelayRoute(.notificationsPrefixed(prefix), direction)
    }

    /// The retained notification of `name`.
    public static func retained(named name: String, _ direction: Direction = .both) -> RelayRoute {
        RelayRoute(.retained(name: name), direction)
    }

    /// The group value `name`.
    public static func value(named name: String, _ direction: Direction = .both) -> RelayRoute {
        RelayRoute(.value(name: name), direction)
    }

    /// Requests for `name`: `.outgoing` carries this device's requests to the other's responders.
    public static func requests(named name: String, _ direction: Direction = .both) -> RelayRoute {
        RelayRoute(.requests(name: name), direction)
    }
}
