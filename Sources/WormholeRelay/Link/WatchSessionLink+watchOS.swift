#if os(watchOS)
import WatchConnectivity

// The Watch's side of the session. Unchecked: no watchOS SDK is at hand to compile it against; the iPhone's side
// (WatchSessionLink+iOS.swift) is type-checked and linked for iOS.

/// The Watch's side of the session: the iPhone is always paired; its app may not be installed.
extension WatchSessionLink {
    /// Whether the iPhone is paired (always, on a Watch), and the iPhone app installed on it.
    var counterpart: (isPaired: Bool, isInstalled: Bool) {
        (true, session.isCompanionAppInstalled)
    }

    /// The iPhone app was installed or removed.
    public func sessionCompanionAppInstalledDidChange(_ session: WCSession) {
        handleSessionStateChange()
        appDelegate?.sessionCompanionAppInstalledDidChange?(session)
    }
}
#endif
