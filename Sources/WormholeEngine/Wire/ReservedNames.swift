/// The notification names Wormhole keeps for itself: requests (`wormhole.request.<name>`) and replies
/// (`wormhole.reply.<requester>`). A subscription to every name matches none of them, so observers of every
/// name and `wormhole listen` without a name never see them; users cannot post under them.
///
/// A responder's subscription to `wormhole.request.<name>` is the mark in its registry entry that says a
/// process answers requests for `<name>`: a poster finds it as any subscription, and a registry reader of an
/// earlier version reads it as one.
///
/// A subscription to `wormhole.spooled` is the mark of a listener that takes everything through its spool
/// (a relay): posters never write to its socket, so what it has not handled yet survives its being killed.
package enum ReservedNames {
    package static let requestPrefix = "wormhole.request."
    package static let replyPrefix = "wormhole.reply."
    package static let keepsSpooled = "wormhole.spooled"

    /// Whether `name` is a request's or a reply's: what a subscription to every name does not match.
    package static func isReserved(_ name: String) -> Bool {
        let bytes = name.utf8
        // Most names do not start with "wormhole.re": told from the first byte, with no prefix compared.
        guard bytes.first == UInt8(ascii: "w") else { return false }
        return name.hasPrefix(requestPrefix) || name.hasPrefix(replyPrefix) || name == keepsSpooled
    }

    /// The name a request for `name` travels under, and its responders observe.
    package static func request(_ name: String) -> String { requestPrefix + name }

    /// Whether `name` may be a reply's name: the reply prefix and something after it. A request names where its
    /// replies go; a responder posts to no other name, so a forged request cannot make it post an ordinary one.
    package static func isReplyName(_ name: String) -> Bool {
        name.hasPrefix(replyPrefix) && name.utf8.count > replyPrefix.utf8.count
            && name.utf8.count <= Limits.maximumNameLength
    }
}
