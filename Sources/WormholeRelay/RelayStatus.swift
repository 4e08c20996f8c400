/// What a ``WormholeRelay`` is doing: its link's state, what waits, and what went wrong, counted.
public struct RelayStatus: Sendable, Hashable, CustomStringConvertible {
    /// The link's activation, pairing, installation and reachability.
    public var link: RelayLinkStatus = .notActivated
    /// Notifications taken from this group and not yet acknowledged by the other device: kept in the
    /// container, sent again until they are.
    public var waiting = 0
    /// Notifications handed to the link since the relay started (again after a resend).
    public var sent = 0
    /// Notifications from the other device posted into this group since the relay started.
    public var posted = 0
    /// Notifications from the other device dropped as already posted (a resend, a transfer repeated).
    public var duplicatesDropped = 0
    /// Retained notifications and group values applied from the other device since the relay started.
    public var valuesApplied = 0
    /// What could not be carried and was dropped, each logged: a payload too large for the link, a notification
    /// the other side sent that this group refuses, a payload that does not decode, an outbox item found damaged
    /// when the relay started.
    public var dropped = 0
    /// Each failure the link reported, counted by kind.
    public var errors: [RelayLinkError.Code: Int] = [:]
    /// The last failure the link reported.
    public var lastError: RelayLinkError?

    public init() {}

    public var description: String {
        "link \(link); waiting \(waiting), sent \(sent), posted \(posted), duplicates \(duplicatesDropped), values \(valuesApplied), dropped \(dropped)"
            + (lastError.map { ", last error \($0)" } ?? "")
    }
}
