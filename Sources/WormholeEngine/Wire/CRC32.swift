/// CRC-32 (IEEE 802.3, as zlib), for the checksums of spool records and the registry.
enum CRC32 {
    /// Eight tables for slicing-by-8: eight bytes per step instead of one.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 {
                value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
            }
            tables[index] = value
        }
        for index in 0..<256 {
            for slice in 1..<8 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }

    /// The checksum of bytes that continue those whose checksum is `previous` (the checksum of both together).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { table in
            var crc: UInt32 = previous ^ 0xFFFF_FFFF
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                let low = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
                    | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
                let high = UInt32(bytes[index + 4]) | UInt32(bytes[index + 5]) << 8
                    | UInt32(bytes[index + 6]) << 16 | UInt32(bytes[index + 7]) << 24
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            return crc ^ 0xFFFF_FFFF
        }
    }
}
