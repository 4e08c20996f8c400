#if canImport(WatchConnectivity)
import Dispatch
import Foundation
import Synchronization
import WatchConnectivity

/// The ``RelayLink`` over WatchConnectivity's `WCSession`: between an iPhone app and its Watch app.
///
/// Each channel is the session's own: ``RelayChannel/message`` is `sendMessage(_:replyHandler:errorHandler:)`,
/// ``RelayChannel/transfer`` is `transferUserInfo(_:)` and ``RelayChannel/context`` is
/// `updateApplicationContext(_:)`; their promises are the ones ``RelayLink`` states. A payload travels as the
/// only entry of a dictionary, under ``payloadKey``; a dictionary without it is not the relay's, and goes to the
/// app.
///
/// An app keeps its own `WCSessionDelegate` in either of two ways:
/// - The link is the session's delegate (``init(session:forwardingTo:)``): it takes what is the relay's and
///   forwards every other call, and every lifecycle call, to the app's delegate. It activates the session in
///   ``activate(_:)``, and again after the session deactivates (on the iPhone, when the user switches Watches),
///   as WatchConnectivity asks; the app's delegate leaves activation to it.
/// - The app's delegate stays the session's (``init(forwardedByDelegateOf:)``): the app activates the session as
///   before, and its delegate hands the link each dictionary that arrives (``handle(message:replyHandler:)``,
///   ``handle(userInfo:)``, ``handle(applicationContext:)``, ``handle(finished:error:)``), skipping those the link
///   says were the relay's own, and calls ``handleSessionStateChange()`` from each lifecycle method.
///
/// The application context is one dictionary for the whole app: the link keeps the app's entries when it
/// updates its own, and an app that updates the context itself keeps the link's entry the same way (it starts
/// from the session's `applicationContext`).
///
/// Not an error: a call before ``activate(_:)`` (what arrives waits for it); a device that does not support
/// WatchConnectivity (an iPad: the link stays not activated and says so in ``status`` and in each error).
public final class WatchSessionLink: NSObject, RelayLink, @unchecked Sendable {
    // Safe because `session` is WatchConnectivity's thread-safe session object, `appDelegate` and the flags are
    // written in the initializer only, and everything that changes is in `state`, under its Mutex.

    /// The key under which a payload travels in the session's dictionaries.
    public static let payloadKey = "wormhole.relay"

    /// The largest payload of each channel: WatchConnectivity's limit of the channel's dictionary, less room for
    /// the dictionary around the payload.
    ///
    /// WatchConnectivity documents no numbers: its headers (WCError.h) say only that a larger dictionary fails with
    /// `WCError.Code.payloadTooLarge`. The figures are the ones commonly cited for its private limits
    /// (`WCPayloadSizeLimitMessage`, `WCPayloadSizeLimitUserInfo`, `WCPayloadSizeLimitApplicationContext`, whose
    /// names the framework exports): 65,536 bytes for a message and a user info, 262,144 bytes for the
    /// application context. They are conservative (1,024 bytes are left for the dictionary, whose own encoding
    /// takes under 100), and the session's own error still applies: a payload under them that the session
    /// refuses fails with ``RelayLinkError/Code/payloadTooLarge`` all the same.
    public static let maximumPayloadSizes: [RelayChannel: Int] = [
        .message: 65_536 - 1_024, .transfer: 65_536 - 1_024, .context: 262_144 - 1_024,
    ]

    /// The session the link uses.
    let session: WCSession
    /// The app's delegate, which gets what is not the relay's when the link is the session's delegate. Weak, as
    /// the session holds its delegate.
    private(set) weak var appDelegate: (any WCSessionDelegate)?
    /// Whether the link is the session's delegate, and so activates it.
    private let isDelegate: Bool
    private let isSupported: Bool
    private let state = Mutex(State())
    /// Where the relay's handler runs, one event at a time.
    private let events = DispatchQueue(label: "wormhole.relay.link")

    private struct State {
        var handler: (@Sendable (RelayLinkEvent) -> Void)?
        /// What came before ``activate(_:)``, in order.
        var waiting: [RelayLinkEvent] = []
    }

    /// A link that is `session`'s delegate, and forwards to `appDelegate` every call that is not the relay's.
    /// - Parameters:
    ///   - session: The session; the default one, which is the only one WatchConnectivity has.
    ///   - appDelegate: The app's own delegate, held weakly; it gets every lifecycle call after the link, and
    ///     every dictionary that is not the relay's (and the calls the link does not take, such as files).
    public init(session: WCSession = .default, forwardingTo appDelegate: (any WCSessionDelegate)? = nil) {
        self.session = session
        self.appDelegate = appDelegate
        isDelegate = true
        isSupported = WCSession.isSupported()
        super.init()
        if isSupported { session.delegate = self }
    }

    /// A link that the app's delegate of `session` forwards calls to; the app activates the session.
    /// - Parameter session: The session, whose delegate the app sets and keeps.
    public init(forwardedByDelegateOf session: WCSession = .default) {
        self.session = session
        isDelegate = false
        isSupported = WCSession.isSupported()
        super.init()
    }

    // MARK: RelayLink

    public func activate(_ handler: @escaping @Sendable (RelayLinkEvent) -> Void) {
        let first = state.withLock { state -> Bool in
            guard state.handler == nil else { return false }
            state.handler = handler
            for event in state.waiting { events.async { handler(event) } }
            state.waiting = []
            return true
        }
        guard first else { return }
        handleSessionStateChange()
        if isDelegate, isSupported, session.activationState == .notActivated { session.activate() }
    }

    public var status: RelayLinkStatus {
        guard isSupported else { return .notActivated }
        let activation: RelayLinkStatus.Activation
        switch session.activationState {
        case .activated: activation = .activated
        case .inactive: activation = .inactive
        default: activation = .notActivated
        }
        let counterpart = self.counterpart
        return RelayLinkStatus(
            activation: activation, isPaired: counterpart.isPaired, isCounterpartInstalled: counterpart.isInstalled,
            isReachable: session.isReachable)
    }

    public func maximumPayloadSize(for channel: RelayChannel) -> Int {
        Self.maximumPayloadSizes[channel] ?? 0
    }

    public func sendMessage(_ payload: Data, completion: @escaping @Sendable (RelayLinkError?) -> Void) {
        if let error = refusal(of: payload, over: .message) {
            completion(error)
            return
        }
        session.sendMessage(
            [Self.payloadKey: payload], replyHandler: { _ in completion(nil) },
            errorHandler: { completion(Self.relayError($0)) })
    }

    public func transfer(_ payload: Data) throws(RelayLinkError) {
        if let error = refusal(of: payload, over: .transfer) { throw error }
        // Failures after queueing come through session(_:didFinish:error:).
        session.transferUserInfo([Self.payloadKey: payload])
    }

    public var outstandingTransfers: [Data] {
        guard isSupported else { return [] }
        return session.outstandingUserInfoTransfers.compactMap { $0.userInfo[Self.payloadKey] as? Data }
    }

    public func updateContext(_ payload: Data) throws(RelayLinkError) {
        if let error = refusal(of: payload, over: .context) { throw error }
        var context = session.applicationContext
        context[Self.payloadKey] = payload
        do {
            try session.updateApplicationContext(context)
        } catch {
            throw Self.relayError(error)
        }
    }

    // MARK: Calls an app's delegate forwards

    /// Takes a message that arrived, if it is the relay's: a dictionary with a payload under ``payloadKey``.
    /// - Parameters:
    ///   - message: The dictionary `session(_:didReceiveMessage:)` or
    ///     `session(_:didReceiveMessage:replyHandler:)` got.
    ///   - replyHandler: The reply handler that came with it, if any; the link replies with an empty dictionary to
    ///     a message that is the relay's own, so the sender learns it arrived.
    /// - Returns: Whether the message was the relay's own: true, and the app does nothing more with it; false when
    ///   it has entries of the app's (the app handles them, and replies if asked).
    @discardableResult
    public func handle(message: [String: Any], replyHandler: (([String: Any]) -> Void)? = nil) -> Bool {
        guard take(message, over: .message) else { return false }
        replyHandler?([:])
        return true
    }

    /// Takes a user info that arrived (`session(_:didReceiveUserInfo:)`), if it is the relay's.
    /// - Returns: Whether it was the relay's own: false when it has entries of the app's.
    @discardableResult
    public func handle(userInfo: [String: Any]) -> Bool {
        take(userInfo, over: .transfer)
    }

    /// Takes an application context that arrived (`session(_:didReceiveApplicationContext:)`): the relay's entry,
    /// if it has one.
    /// - Returns: Whether it was the relay's own: false when it has entries of the app's.
    @discardableResult
    public func handle(applicationContext: [String: Any]) -> Bool {
        take(applicationContext, over: .context)
    }

    /// Takes the end of a user info transfer (`session(_:didFinish:error:)`), if the transfer was the relay's.
    /// - Returns: Whether the transfer was the relay's own.
    @discardableResult
    public func handle(finished transfer: WCSessionUserInfoTransfer, error: (any Error)?) -> Bool {
        let userInfo = transfer.userInfo
        guard let payload = userInfo[Self.payloadKey] as? Data else { return false }
        emit(.transferFinished(payload, error: error.map(Self.relayError)))
        return userInfo.count == 1
    }

    /// Reads the session's state again and tells the relay. Call it from each lifecycle method of the delegate:
    /// activation, reachability, the Watch's state, becoming inactive and deactivating (the app activates the
    /// session again after that, as WatchConnectivity asks).
    public func handleSessionStateChange() {
        emit(.statusChanged(status))
    }

    /// Tells the relay how activation ended: call it from the delegate's `activationDidCompleteWith`, in place of
    /// ``handleSessionStateChange()``. An error is counted in the relay's status.
    public func handleActivation(error: (any Error)?) {
        if let error { emit(.failed(Self.relayError(error))) }
        handleSessionStateChange()
    }

    // MARK: Inside

    /// Hands the relay the payload in `dictionary`, if it has one; whether `dictionary` held nothing else.
    private func take(_ dictionary: [String: Any], over channel: RelayChannel) -> Bool {
        guard let payload = dictionary[Self.payloadKey] as? Data else { return false }
        emit(.received(payload, over: channel))
        return dictionary.count == 1
    }

    /// The error for a payload the link does not give to the session: not activated, no counterpart, too large.
    private func refusal(of payload: Data, over channel: RelayChannel) -> RelayLinkError? {
        let status = self.status
        if !isSupported { return RelayLinkError(.notActivated, "WatchConnectivity is not supported on this device") }
        if status.activation != .activated { return RelayLinkError(.notActivated, "the session is \(status.activation.rawValue)") }
        if channel != .message {
            if !status.isPaired { return RelayLinkError(.notPaired, "no Apple Watch is paired") }
            if !status.isCounterpartInstalled { return RelayLinkError(.counterpartNotInstalled, "the counterpart app is not installed") }
        }
        let limit = maximumPayloadSize(for: channel)
        if payload.count > limit {
            return RelayLinkError(.payloadTooLarge, "\(payload.count) bytes over the \(channel.rawValue) channel's \(limit)")
        }
        return nil
    }

    private func emit(_ event: RelayLinkEvent) {
        state.withLock { state in
            if let handler = state.handler {
                events.async { handler(event) }
            } else {
                state.waiting.append(event)
            }
        }
    }

    /// `error`, as WatchConnectivity reports it, in the link's terms.
    static func relayError(_ error: any Error) -> RelayLinkError {
        let message = "\(error.localizedDescription) (\((error as NSError).domain) \((error as NSError).code))"
        guard let error = error as? WCError else { return RelayLinkError(.failed, message) }
        switch error.code {
        case .sessionNotActivated, .sessionInactive, .sessionMissingDelegate, .sessionNotSupported:
            return RelayLinkError(.notActivated, message)
        case .deviceNotPaired:
            return RelayLinkError(.notPaired, message)
        // A Watch-only app has no counterpart to install.
        case .watchAppNotInstalled, .companionAppNotInstalled, .watchOnlyApp:
            return RelayLinkError(.counterpartNotInstalled, message)
        case .notReachable:
            return RelayLinkError(.notReachable, message)
        case .payloadTooLarge:
            return RelayLinkError(.payloadTooLarge, message)
        case .messageReplyTimedOut, .transferTimedOut:
            return RelayLinkError(.timedOut, message)
        default:
            return RelayLinkError(.failed, message)
        }
    }
}

// MARK: WCSessionDelegate

/// The calls of the session when the link is its delegate: each takes what is the relay's and forwards the rest,
/// and each lifecycle call, to the app's delegate. The calls the link does not implement (message data, files) go
/// to the app's delegate whole, through the Objective-C runtime's forwarding.
extension WatchSessionLink: WCSessionDelegate {
    public func session(
        _ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState,
        error: (any Error)?
    ) {
        handleActivation(error: error)
        appDelegate?.session(session, activationDidCompleteWith: activationState, error: error)
    }

    public func sessionReachabilityDidChange(_ session: WCSession) {
        handleSessionStateChange()
        appDelegate?.sessionReachabilityDidChange?(session)
    }

    public func session(_ session: WCSession, didReceiveMessage message: [String: Any]) {
        guard !handle(message: message) else { return }
        appDelegate?.session?(session, didReceiveMessage: message)
    }

    /// A message whose sender waits for a reply: the relay's is answered with an empty dictionary; another goes to
    /// the app's delegate, which replies (to its variant without a reply handler if it has only that one: then
    /// the sender's error handler runs when the session gives up waiting).
    public func session(
        _ session: WCSession, didReceiveMessage message: [String: Any],
        replyHandler: @escaping ([String: Any]) -> Void
    ) {
        guard !handle(message: message, replyHandler: replyHandler) else { return }
        if let reply = appDelegate?.session(_:didReceiveMessage:replyHandler:) {
            reply(session, message, replyHandler)
        } else {
            appDelegate?.session?(session, didReceiveMessage: message)
        }
    }

    public func session(_ session: WCSession, didReceiveUserInfo userInfo: [String: Any]) {
        guard !handle(userInfo: userInfo) else { return }
        appDelegate?.session?(session, didReceiveUserInfo: userInfo)
    }

    public func session(_ session: WCSession, didReceiveApplicationContext applicationContext: [String: Any]) {
        guard !handle(applicationContext: applicationContext) else { return }
        appDelegate?.session?(session, didReceiveApplicationContext: applicationContext)
    }

    public func session(
        _ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?
    ) {
        guard !handle(finished: userInfoTransfer, error: error) else { return }
        appDelegate?.session?(session, didFinish: userInfoTransfer, error: error)
    }

    /// Whether the link, or else the app's delegate, answers `selector`: the session asks before each optional
    /// call.
    override public func responds(to selector: Selector!) -> Bool {
        super.responds(to: selector) || appDelegate?.responds(to: selector) == true
    }

    /// The app's delegate, for a call the link does not implement itself.
    override public func forwardingTarget(for selector: Selector!) -> Any? {
        if let appDelegate, appDelegate.responds(to: selector) { return appDelegate }
        return super.forwardingTarget(for: selector)
    }
}
#endif
