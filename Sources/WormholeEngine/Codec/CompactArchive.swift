/// The compact archive: how a userInfo of property-list values travels between Wormhole processes.
///
/// A keyed archive (Foundation's format) describes every object twice over: class entries, UID references, a
/// table of offsets. Most userInfos hold nothing but property-list values, and for those Wormhole writes this
/// instead: four bytes of magic, then the root value, each value a tag byte and what that tag says follows.
/// Nothing is shared and nothing refers back, so a reader walks the bytes once, front to back, and what an
/// archive expands into is bounded by its size. A userInfo holding an object of the user's own class still
/// travels as a keyed archive; a reader tells the two apart by their first bytes (a keyed archive starts with
/// `bplist00`).
///
/// | Tag | Value | Followed by |
/// |-----|-------|-------------|
/// | 0x00 | `NSNull` | nothing |
/// | 0x01, 0x02 | `false`, `true` | nothing |
/// | 0x03 | integer | a signed LEB128 of 64 bits at most (zigzag) |
/// | 0x04 | unsigned integer over `Int64.max` | an LEB128 |
/// | 0x05 | real | 8 bytes, IEEE 754, little-endian |
/// | 0x06 | string | a length (LEB128), then that many bytes of UTF-8 |
/// | 0x07 | data | a length, then the bytes |
/// | 0x08 | date | 8 bytes: seconds since 2001-01-01, as a real |
/// | 0x09 | array | a count, then the elements |
/// | 0x0A | dictionary | a count, then each key (a string or number) followed by its value |
/// | 0x0B | set | a count, then the members |
/// | 0x0C | URL | its relative string (a string value), then its base: a URL value or `NSNull` |
/// | 0x0D | UUID | 16 bytes |
enum CompactArchive {
    /// The first four bytes of every compact archive.
    static let magic: [UInt8] = [0xF7, 0x57, 0x43, 0x01]

    enum Tag: UInt8 {
        case null = 0x00
        case `false` = 0x01
        case `true` = 0x02
        case integer = 0x03
        case unsignedInteger = 0x04
        case real = 0x05
        case string = 0x06
        case data = 0x07
        case date = 0x08
        case array = 0x09
        case dictionary = 0x0A
        case set = 0x0B
        case url = 0x0C
        case uuid = 0x0D
    }

    /// Whether `bytes` is a compact archive rather than a keyed one.
    static func isCompact(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes(isCompact)
    }

    static func isCompact(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 4 && bytes[0] == magic[0] && bytes[1] == magic[1] && bytes[2] == magic[2] && bytes[3] == magic[3]
    }
}

extension ArchiveBytes {
    /// Whether the bytes are a ``CompactArchive`` rather than a keyed archive.
    package var isCompact: Bool { withBytes(CompactArchive.isCompact) }
}
