/// What a ``WormholeBridge`` is doing: its connection to the server, what waits, and what went wrong, counted.
public struct BridgeStatus: Sendable, Hashable, CustomStringConvertible {
    /// The bridge's connection to its server.
    public enum Connection: Sendable, Hashable, CustomStringConvertible {
        /// Not started, or closed.
        case stopped
        /// Connecting, or waiting to connect again after a failure.
        case connecting
        /// Connected, with the stream and this host's consumer in place.
        case connected

        public var description: String {
            switch self {
            case .stopped: "stopped"
            case .connecting: "connecting"
            case .connected: "connected"
            }
        }
    }

    public var connection: Connection = .stopped
    /// Notifications taken from this group and not yet stored by the server: kept in the container, published
    /// again until they are.
    public var waiting = 0
    /// Notifications the server stored since the bridge started.
    public var sent = 0
    /// Notifications from other hosts posted into this group since the bridge started.
    public var posted = 0
    /// Retained notifications and group values from other hosts written here since the bridge started.
    public var valuesApplied = 0
    /// This host's requests published for responders on other hosts since the bridge started.
    public var requestsSent = 0
    /// Other hosts' requests posted here for this host's responders since the bridge started.
    public var requestsReceived = 0
    /// Messages dropped as already posted (handed over again by the server).
    public var duplicatesDropped = 0
    /// What could not be carried and was dropped, each logged: a notification larger than the server takes, a
    /// message that is not the bridge's, one whose name is not its subject's, a name not routed here (or
    /// reserved), a message in the pull's inbox that the host's consumer did not hand over, a request whose time
    /// was up or that no responder here answers any more.
    public var dropped = 0
    /// Times the server's consumer passed over messages of the stream (a cluster's server that lagged as it took
    /// over), which the bridge then read from the stream itself.
    public var gapsFilled = 0
    /// Times the connection failed and was made again.
    public var reconnects = 0
    /// The last failure, said plainly.
    public var lastError: String?

    public init() {}

    public var description: String {
        "\(connection); waiting \(waiting), sent \(sent), posted \(posted), values \(valuesApplied), requests sent \(requestsSent), received \(requestsReceived), duplicates \(duplicatesDropped), dropped \(dropped), gaps filled \(gapsFilled), reconnects \(reconnects)"
            + (lastError.map { "; last error: \($0)" } ?? "")
    }
}
