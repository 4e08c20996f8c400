/// What a ``RelayLink`` knows of itself and its counterpart, as `WCSession` reports it.
public struct RelayLinkStatus: Sendable, Hashable, CustomStringConvertible {
    /// Where the link is in its activation.
    public enum Activation: String, Sendable, Hashable {
        /// Not activated yet, or activation failed.
        case notActivated
        /// Was activated and is switching counterparts (another Watch was chosen); nothing goes through.
        case inactive
        /// Payloads go through.
        case activated
    }

    public var activation: Activation
    /// Whether a counterpart device is paired (on a Watch: always).
    public var isPaired: Bool
    /// Whether the counterpart app is installed.
    public var isCounterpartInstalled: Bool
    /// Whether ``RelayChannel/message`` reaches the counterpart now (on the Watch: the phone app is reachable
    /// in the background; on the phone: the Watch app is in the foreground).
    public var isReachable: Bool

    public init(activation: Activation, isPaired: Bool, isCounterpartInstalled: Bool, isReachable: Bool) {
        self.activation = activation
        self.isPaired = isPaired
        self.isCounterpartInstalled = isCounterpartInstalled
        self.isReachable = isReachable
    }

    /// A link that has not been activated.
    public static let notActivated = RelayLinkStatus(
        activation: .notActivated, isPaired: false, isCounterpartInstalled: false, isReachable: false)

    /// Whether queued payloads can be given to the link: activated, paired, and the counterpart installed.
    public var canQueue: Bool { activation == .activated && isPaired && isCounterpartInstalled }

    public var description: String {
        "\(activation.rawValue), \(isPaired ? "paired" : "not paired"), counterpart \(isCounterpartInstalled ? "installed" : "not installed"), \(isReachable ? "reachable" : "not reachable")"
    }
}
