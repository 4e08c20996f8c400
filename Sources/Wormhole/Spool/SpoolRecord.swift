/// A frame as it sits in a spool file: `"WHSR"  length:u32  crc32:u32  frame`, big-endian.
///
/// A poster killed while appending leaves at most a torn tail; the reader skips any record whose length or
/// checksum does not hold, resynchronises on the next magic, and counts what it skipped.
enum SpoolRecord {
    static let magic: UInt32 = 0x5748_5352
    static let headerSize = 12

    static func encode(_ frame: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize + frame.count)
        writer.write(magic)
        writer.write(UInt32(frame.count))
        writer.write(CRC32.checksum(frame))
        writer.write(frame)
        return writer.bytes
    }

    /// The frames in `bytes`, and how many damaged stretches were skipped.
    static func decodeAll(_ bytes: [UInt8]) -> (frames: [[UInt8]], damaged: Int) {
        var frames: [[UInt8]] = []
        var damaged = 0
        var offset = 0
        var inDamage = false
        while offset < bytes.count {
            if let frame = record(in: bytes, at: offset) {
                frames.append(frame)
                offset += headerSize + frame.count
                inDamage = false
            } else {
                if !inDamage { damaged += 1 }
                inDamage = true
                offset += 1
            }
        }
        return (frames, damaged)
    }

    private static func record(in bytes: [UInt8], at offset: Int) -> [UInt8]? {
        var reader = ByteReader(bytes, from: offset)
        guard (try? reader.read(UInt32.self, "magic")) == magic,
            let length = try? reader.read(UInt32.self, "length"),
            let checksum = try? reader.read(UInt32.self, "checksum"),
            let frame = try? reader.readBytes(Int(length), "record")
        else { return nil }
        return CRC32.checksum(frame) == checksum ? Array(frame) : nil
    }
}
