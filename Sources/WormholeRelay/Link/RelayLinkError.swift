/// A failure a ``RelayLink`` reports: which, and what the link said.
public struct RelayLinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, in WatchConnectivity's terms.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The session is not activated (or is inactive).
        case notActivated
        /// No counterpart device is paired.
        case notPaired
        /// The counterpart app is not installed.
        case counterpartNotInstalled
        /// A message was sent while the counterpart was not reachable, or it became unreachable meanwhile.
        case notReachable
        /// The payload is larger than the channel takes (``RelayLink/maximumPayloadSize(for:)``).
        case payloadTooLarge
        /// The counterpart did not answer in time.
        case timedOut
        /// Anything else the link reports; ``RelayLinkError/message`` says what.
        case failed
    }

    public var code: Code
    /// What the link said, for a log.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
