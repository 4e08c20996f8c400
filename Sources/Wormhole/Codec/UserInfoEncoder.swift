/// Archives a userInfo dictionary with secure coding, entirely with ``KeyedArchiveEncoder``: property-list
/// values, the Foundation classes it writes itself, and `NSSecureCoding` classes of the user's own through
/// their `encode(with:)`. Foundation's archiver is never used: in a statically linked program it returns no
/// bytes at all.
enum UserInfoEncoder {
    /// The keyed archive of `userInfo`.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming the key path of the first value that cannot
    ///   travel; ``WormholeError/Code/payloadTooLarge`` past `maximumSize` bytes of strings and data.
    static func encode(_ userInfo: [AnyHashable: Any], maximumSize: Int) throws(WormholeError) -> [UInt8] {
        try encode(root: userInfo, maximumSize: maximumSize)
    }

    /// The archive of any property-list value or `NSSecureCoding` object graph.
    static func encode(root value: Any, maximumSize: Int) throws(WormholeError) -> [UInt8] {
        try KeyedArchiveEncoder.encode(value, path: "userInfo", maximumSize: maximumSize)
    }
}
