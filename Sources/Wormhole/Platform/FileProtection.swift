// iOS data protection for the container. With the `complete` class, files become unreadable whenever the device
// locks, and an extension running in the background could no longer post or receive; the class kept here,
// `completeUntilFirstUserAuthentication`, keeps them readable from the first unlock after boot on (before that,
// nothing protected is readable: opening a center fails with a system error, EPERM). Files and folders created
// in a folder take its class, so the container's folder is set before anything is made in it. Written from
// Apple's documentation; this Linux machine cannot compile it. Elsewhere it does nothing.
#if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
import Foundation
#endif

enum FileProtection {
    /// Gives the folder at `path` the protection class that keeps it readable while the device is locked.
    static func keepReadableWhileLocked(_ path: String) {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try? FileManager.default.setAttributes(
            [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: path)
        #endif
    }
}
