import Foundation

/// What carries a relay's traffic between two devices: the three channels of WatchConnectivity, its activation
/// and its reachability, each with the promises WatchConnectivity makes of it. ``WormholeRelay`` is built on any
/// link that keeps them; `WatchSessionLink` is the one over `WCSession`.
///
/// A link carries opaque payloads (`Data`) and promises, per channel:
/// - ``RelayChannel/transfer``: a payload ``transfer(_:)`` accepted is queued, survives the sending app's exit,
///   and is handed to the counterpart once, in the order of sending, also while that app is suspended or not
///   running (it gets it when it runs). A payload handed over is gone, even if the receiving app dies while
///   handling it: a relay acknowledges what it has applied and sends again what is not acknowledged.
/// - ``RelayChannel/context``: only the latest payload given to ``updateContext(_:)`` is kept and handed over,
///   once, when the counterpart runs; one equal to the last handed over may not be handed over again.
/// - ``RelayChannel/message``: ``sendMessage(_:completion:)`` reaches the counterpart only while it is
///   reachable (``RelayLinkStatus/isReachable``), at most once; its completion says whether it did. A payload
///   whose completion reports an error may still have arrived.
///
/// Every call may come from any thread; events come on a queue of the link's, one at a time. A link reports each
/// failure it meets as a ``RelayLinkError`` (through a throw, a completion or ``RelayLinkEvent/transferFinished(_:error:)``),
/// never by dropping a payload without a word.
public protocol RelayLink: AnyObject, Sendable {
    /// Starts the link, once: from then on it hands `handler` what arrives and what changes, one event at a
    /// time. The link's status changes to activated (or says why not) through an event.
    func activate(_ handler: @escaping @Sendable (RelayLinkEvent) -> Void)

    /// What the link knows now of itself and its counterpart.
    var status: RelayLinkStatus { get }

    /// The largest payload `channel` takes; a larger one fails with ``RelayLinkError/Code/payloadTooLarge``.
    func maximumPayloadSize(for channel: RelayChannel) -> Int

    /// Sends `payload` to the counterpart now, if it is reachable. `completion` runs once: with nil when the
    /// counterpart received it, with a ``RelayLinkError`` otherwise (``RelayLinkError/Code/notReachable`` when it
    /// is not reachable).
    func sendMessage(_ payload: Data, completion: @escaping @Sendable (RelayLinkError?) -> Void)

    /// Queues `payload` for the counterpart: see ``RelayChannel/transfer``.
    /// - Throws: ``RelayLinkError`` when the link cannot queue it (not activated, not paired, the counterpart not
    ///   installed, the payload too large).
    func transfer(_ payload: Data) throws(RelayLinkError)

    /// The payloads given to ``transfer(_:)`` that the link still holds: not yet handed to the counterpart.
    var outstandingTransfers: [Data] { get }

    /// Replaces the context the counterpart gets: see ``RelayChannel/context``.
    /// - Throws: ``RelayLinkError`` when the link cannot keep it (not activated, not paired, the counterpart not
    ///   installed, the payload too large).
    func updateContext(_ payload: Data) throws(RelayLinkError)
}

/// The three ways a ``RelayLink`` carries a payload: see ``RelayLink``.
public enum RelayChannel: String, Sendable, Hashable, CaseIterable {
    /// Now, while the counterpart is reachable, at most once (`sendMessage`).
    case message
    /// Queued, in order, surviving both apps' exits, handed over once (`transferUserInfo`).
    case transfer
    /// The latest only (`updateApplicationContext`).
    case context
}

/// What a ``RelayLink`` tells its relay.
public enum RelayLinkEvent: Sendable {
    /// A payload arrived from the counterpart.
    case received(Data, over: RelayChannel)
    /// The link's status changed: activation, pairing, installation, reachability.
    case statusChanged(RelayLinkStatus)
    /// A payload given to ``RelayLink/transfer(_:)`` was handed to the counterpart (nil) or failed.
    case transferFinished(Data, error: RelayLinkError?)
    /// A failure tied to no payload: activation failed, for one.
    case failed(RelayLinkError)
}
