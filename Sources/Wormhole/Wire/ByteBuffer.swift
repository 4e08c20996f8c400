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

/// Reads big-endian integers and length-prefixed fields with a bounds check on every read.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    init(_ bytes: [UInt8], from offset: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { max(0, end - offset) }

    mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String) throws(WormholeError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw truncated(what()) }
        // One load, checked above, rather than a bounds-checked read per byte.
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        offset += size
        return T(bigEndian: value)
    }

    mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(WormholeError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw truncated(what()) }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// A `UInt32` count then that many bytes, refused above `limit`.
    /// A `UInt32` length or count as another process wrote it, as an `Int`: `Int.max` where a 32-bit `Int` (watchOS)
    /// cannot hold it, which every caller's bound then refuses, rather than a trap on the conversion.
    mutating func readLength(_ what: @autoclosure () -> String) throws(WormholeError) -> Int {
        Int(exactly: try read(UInt32.self, what())) ?? .max
    }

    mutating func readField(_ what: @autoclosure () -> String, limit: Int) throws(WormholeError) -> ArraySlice<UInt8> {
        let count = try readLength(what())
        guard count <= limit else { throw WormholeError(.corruptData, "\(what()) claims \(count) bytes, over \(limit)") }
        return try readBytes(count, what())
    }

    /// A `UInt32` count then that many bytes of UTF-8, which must be valid.
    mutating func readString(_ what: @autoclosure () -> String, limit: Int) throws(WormholeError) -> String {
        let raw = try readField(what(), limit: limit)
        // Names are mostly ASCII, which is valid UTF-8 as it is: checked in one pass, then decoded without the
        // generic validating path (a third of a frame's decoding otherwise).
        if let ascii = raw.withUnsafeBufferPointer({ bytes in bytes.allSatisfy { $0 < 0x80 } ? String(decoding: bytes, as: UTF8.self) : nil }) {
            return ascii
        }
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw WormholeError(.corruptData, "\(what()) is not valid UTF-8")
        }
        return string
    }

    private func truncated(_ what: String) -> WormholeError {
        WormholeError(.corruptData, "\(what) is cut short at byte \(offset) of \(end)")
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes`, for a body that throws ``WormholeError``.
    func withRawBytes<R>(_ body: (UnsafeRawBufferPointer) throws(WormholeError) -> R) throws(WormholeError) -> R {
        try withUnsafeBytes { raw in Result { () throws(WormholeError) -> R in try body(raw) } }.get()
    }
}
