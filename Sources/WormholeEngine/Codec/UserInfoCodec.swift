/// How a userInfo travels between processes: as a ``CompactArchive`` when it holds only values (property-list
/// values, `NSNull`, sets, URLs, UUIDs), else as a keyed archive (the `NSKeyedArchiver` format) written by
/// ``KeyedArchiveEncoder``: objects of the user's own classes, through their `encode(with:)`. Foundation's
/// archiver is never used: in a statically linked program it returns no bytes at all. A reader tells the two
/// formats apart by their first bytes.
package enum UserInfoCodec {
    /// The archive of `userInfo`.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming the key path of the first value that cannot
    ///   travel; ``WormholeError/Code/payloadTooLarge`` past `maximumSize` bytes of strings and data.
    package static func encode(_ userInfo: [AnyHashable: Any], maximumSize: Int) throws(WormholeError) -> [UInt8] {
        if let compact = CompactArchiveWriter.encode(userInfo, maximumSize: maximumSize) { return compact }
        return try KeyedArchiveEncoder.encode(userInfo, path: "userInfo", maximumSize: maximumSize)
    }

    /// Decodes the userInfo archive `bytes`, of either format, whose values all belong to `allowed`.
    /// - Throws: ``WormholeError/Code/disallowedClass`` for a class outside `allowed`, and
    ///   ``WormholeError/Code/corruptData`` saying what is wrong, for anything malformed.
    package static func decode(_ bytes: [UInt8], allowed: AllowedClasses) throws(WormholeError) -> [AnyHashable: Any] {
        guard CompactArchive.isCompact(bytes) else { return try KeyedArchiveDecoder.decodeUserInfo(bytes, allowed: allowed) }
        return try bytes.withRawBytes { raw throws(WormholeError) in
            try CompactArchiveReader.decodeUserInfo(raw, allowed: allowed)
        }
    }

    /// Decodes `archive` as the bytes it holds are decoded above, without copying them first; the large `Data`
    /// values of a mapped one may use its pages in place (``FileMapping/lend()``).
    package static func decode(_ archive: ArchiveBytes, allowed: AllowedClasses) throws(WormholeError) -> [AnyHashable: Any] {
        guard archive.isCompact else { return try KeyedArchiveDecoder.decodeUserInfo(archive.array, allowed: allowed) }
        return try archive.withBytes { raw throws(WormholeError) in
            try CompactArchiveReader.decodeUserInfo(raw, lent: archive.mapping?.lend(), allowed: allowed)
        }
    }
}
