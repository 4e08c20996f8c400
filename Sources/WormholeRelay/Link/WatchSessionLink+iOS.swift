#if canImport(WatchConnectivity) && !os(watchOS)
import WatchConnectivity

/// The iPhone's side of the session: the paired Watch and its app, and the switch from one Watch to another.
extension WatchSessionLink {
    /// Whether a Watch is paired, and the Watch app installed on it.
    var counterpart: (isPaired: Bool, isInstalled: Bool) {
        (session.isPaired, session.isWatchAppInstalled)
    }

    /// The user is switching to another Watch: nothing new goes out until the session is activated for it.
    public func sessionDidBecomeInactive(_ session: WCSession) {
        handleSessionStateChange()
        appDelegate?.sessionDidBecomeInactive(session)
    }

    /// Everything of the previous Watch was delivered: the link activates the session for the Watch now chosen,
    /// as WatchConnectivity asks (the app's delegate, which gets the call after, leaves that to the link).
    public func sessionDidDeactivate(_ session: WCSession) {
        session.activate()
        handleSessionStateChange()
        appDelegate?.sessionDidDeactivate(session)
    }

    /// The Watch was paired or unpaired, or its app installed or removed.
    public func sessionWatchStateDidChange(_ session: WCSession) {
        handleSessionStateChange()
        appDelegate?.sessionWatchStateDidChange?(session)
    }
}
#endif
