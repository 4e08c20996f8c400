/// Appends big-endian integers and length-prefixed fields to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        // A typed buffer takes Array's memcpy path; a raw one goes element by element.
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    mutating func write(_ raw: some Collection<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    /// A `UInt32` byte count, then the bytes.
    mutating func writeField(_ raw: some Collection<UInt8>) {
        write(UInt32(truncatingIfNeeded: raw.count))
        bytes.append(contentsOf: raw)
    }

    /// A `UInt32` byte count, then the string's UTF-8, copied without an intermediate array.
    mutating func writeField(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            write(UInt32(truncatingIfNeeded: utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }
}
