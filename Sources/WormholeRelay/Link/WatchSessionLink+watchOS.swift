#if os(watchOS)
import Foundation
import WatchConnectivity

// The Watch's side of the session. Unchecked: no watchOS SDK is at hand to compile it against; the iPhone's side
// (WatchSessionLink+iOS.swift) is type-checked and linked for iOS.

/// The Watch's side of the session: the iPhone is always paired; its app may not be installed.
extension WatchSessionLink {
    /// Whether the iPhone is paired (always, on a Watch), and the iPhone app installed on it.
    ///
    /// `isCompanionAppInstalled` is documented for Watch apps that run without their iPhone app; a Watch app that
    /// came with its iPhone app is taken to have it, so that what it sends queues rather than waits on a flag
    /// that may not apply to it. A transfer to an iPhone app that is not there fails with the session's
    /// `companionAppNotInstalled`, which the relay counts.
    var counterpart: (isPaired: Bool, isInstalled: Bool) {
        (true, session.isCompanionAppInstalled || !Self.runsIndependently)
    }

    /// Whether this Watch app declares that it runs without its iPhone app (`WKRunsIndependentlyOfCompanionApp`).
    static var runsIndependently: Bool {
        Bundle.main.object(forInfoDictionaryKey: "WKRunsIndependentlyOfCompanionApp") as? Bool ?? false
    }

    /// The iPhone app was installed or removed.
    public func sessionCompanionAppInstalledDidChange(_ session: WCSession) {
        handleSessionStateChange()
        appDelegate?.sessionCompanionAppInstalledDidChange?(session)
    }
}
#endif
