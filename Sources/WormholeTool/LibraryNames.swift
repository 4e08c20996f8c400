import Wormhole

/// The notification names the library keeps for its own traffic, which `status` and `listen` leave out unless
/// given `--all`: requests (`wormhole.request.<name>`, a responder's mark in the registry), replies
/// (`wormhole.reply.<requester>`), group values' announcements (`wormhole.value.<name>`) and the mark of a
/// listener that takes everything through its spool (`wormhole.spooled`).
///
/// A subscription to every name already matches none of them but the values' announcements; a name typed
/// with `--name` is printed whatever it is.
enum LibraryNames {
    /// The prefixes, each taken from the library where it says it.
    static let prefixes = [
        GroupNotificationCenter.requestName(for: ""),
        "wormhole.reply.",
        GroupNotificationCenter.valueNotificationName(for: ""),
    ]
    /// The whole names.
    static let marks: Set<String> = ["wormhole.spooled"]

    /// Whether `name` is one of the library's own.
    static func contains(_ name: String) -> Bool {
        // Most names do not start with "wormhole.": told from the first byte.
        guard name.utf8.first == UInt8(ascii: "w") else { return false }
        return marks.contains(name) || prefixes.contains { name.hasPrefix($0) }
    }
}
