/// The `seen` file of a durable listener's spool folder: for each poster, the largest sequence the listener took
/// from its spool, written as a run ends cleanly. Its identity's next run drops a spooled
/// frame it names: a record a poster wrote again into a new segment because the listener took the old one while
/// it wrote, and that the run before handed over already. Big-endian:
/// ```
/// "WHSN"  version:u8  0:u8 0:u8 0:u8  count:u32  (poster:u64  sequence:u64) × count  check:u32
/// ```
/// `check` is the CRC-32 of the entries. The file is written whole under a temporary name and renamed into place.
package enum SeenFormat {
    static let magic = Array("WHSN".utf8)
    static let version: UInt8 = 1
    static let headerSize = 12
    static let entrySize = 16
    /// The most entries a file may hold: as many posters as a reader remembers.
    static var maximumEntries: Int { Limits.rememberedPosters }
    package static var maximumSize: Int { headerSize + maximumEntries * entrySize + 4 }

    /// The file holding `entries`, of which the first ``maximumEntries`` are kept.
    package static func encode(_ entries: [(poster: UInt64, sequence: UInt64)]) -> [UInt8] {
        let kept = entries.prefix(maximumEntries)
        var writer = ByteWriter(capacity: headerSize + kept.count * entrySize + 4)
        writer.write(magic)
        writer.write([version, 0, 0, 0])
        writer.write(UInt32(kept.count))
        for entry in kept {
            writer.write(entry.poster)
            writer.write(entry.sequence)
        }
        let check = CRC32.checksum(writer.bytes[headerSize...])
        writer.write(check)
        return writer.bytes
    }

    /// The entries of a file's `bytes`. Throws ``WormholeError/Code/corruptData`` when they are not such a file:
    /// another magic or version, a count over ``maximumEntries`` or other than the bytes hold, or a failed check.
    package static func decode(_ bytes: [UInt8]) throws(WormholeError) -> [(poster: UInt64, sequence: UInt64)] {
        var reader = ByteReader(bytes)
        try reader.readHeader(magic: magic, version: version, "seen file")
        let count = try reader.readLength("seen count")
        guard count <= maximumEntries, bytes.count == headerSize + count * entrySize + 4 else {
            throw WormholeError(.corruptData, "claims \(count) entries in \(bytes.count) bytes")
        }
        var entries: [(poster: UInt64, sequence: UInt64)] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let poster = try reader.read(UInt64.self, "seen poster")
            let sequence = try reader.read(UInt64.self, "seen sequence")
            entries.append((poster, sequence))
        }
        let check = try reader.read(UInt32.self, "seen check")
        guard check == CRC32.checksum(bytes[headerSize..<(bytes.count - 4)]) else {
            throw WormholeError(.corruptData, "fails its check")
        }
        return entries
    }
}
