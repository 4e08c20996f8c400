/// What a center's process has sent and received on its container since it started.
///
/// Every drop is counted here and logged, so nothing is lost silently.

public struct WormholeStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Notifications posted from this process.
    public var posted = 0
    /// Copies put straight into a listener's socket (or handed to an observer in this process).
    public var delivered = 0
    /// Copies written to a listener's spool because it could not take them now.
    public var spooled = 0
    /// Copies that could not be delivered or spooled (a full spool, a system error).
    public var failed = 0
    /// Notifications this process received for its observers.
    public var received = 0
    /// Received messages or spool records dropped as malformed, damaged spool stretches skipped, and damaged
    /// or planted files in the container skipped (a group value's version that is not whole, a number out of range).
    public var dropped = 0
    /// Deliveries whose userInfo was refused (a disallowed class or a malformed archive): the observer got
    /// the notification with `userInfo == nil`.
    public var userInfoRejected = 0
    /// Notifications that typed-message observers could not decode into their message type.
    public var messagesRejected = 0
    /// Reads of a ``GroupValue`` whose stored value did not decode as its type (another process stored another
    /// type): the reader got the default.
    public var valuesRejected = 0
    /// Writes through ``GroupValue/value``'s setter that failed (the value stayed as it was).
    public var valueWritesFailed = 0
    /// Dead listeners removed from the registry.
    public var listenersRemoved = 0
    /// Failures of this process's receive path itself, each logged: a wait for its sockets, an accept, or a
    /// read of the socket posters reach. While one persists, the listener binds its socket again once a second.
    public var receiveErrors = 0
    /// Replies this process received for no request it waits for: a second responder's (the first reply
    /// wins), one that came after the request timed out or its task was cancelled, or one for a request it
    /// never made; and replies its responders sent to a requester that is gone.
    public var repliesDropped = 0
    /// Requests this process's responders did not answer: expired before the responder ran, or malformed.
    public var requestsDropped = 0

    /// Statistics with every count at zero.
    public init() {}

    /// Every count, named, on one line.
    public var description: String {
        "posted \(posted), delivered \(delivered), spooled \(spooled), failed \(failed), received \(received), "
            + "dropped \(dropped), userInfo rejected \(userInfoRejected), messages rejected \(messagesRejected), values rejected \(valuesRejected), "
            + "value writes failed \(valueWritesFailed), "
            + "listeners removed \(listenersRemoved), receive errors \(receiveErrors), "
            + "replies dropped \(repliesDropped), requests dropped \(requestsDropped)"
    }
}
