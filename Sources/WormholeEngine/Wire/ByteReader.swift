/// Bytes a ``ByteReader`` reads: an array, whose slices a reader's caller may keep, or a buffer that is reused
/// (a socket's receive slot), from which what is kept is copied.
package protocol ReadableBytes: RandomAccessCollection where Element == UInt8, Index == Int {
    /// Calls `body` with the bytes in memory.
    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R
    /// The bytes of `range`, which lies within, as an archive that outlives these bytes.
    func keptArchive(_ range: Range<Int>) -> ArchiveBytes
}

extension Array: ReadableBytes where Element == UInt8 {
    package func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { withUnsafeBytes(body) }
    /// A slice: the archive keeps the array alive instead of a copy.
    package func keptArchive(_ range: Range<Int>) -> ArchiveBytes { ArchiveBytes(self[range]) }
}

extension UnsafeRawBufferPointer: ReadableBytes {
    package func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { body(self) }
    /// A copy: the buffer is reused.
    package func keptArchive(_ range: Range<Int>) -> ArchiveBytes { ArchiveBytes(Array(self[range])) }
}

/// Reads big-endian integers and length-prefixed fields with a bounds check on every read.
package struct ByteReader<Bytes: ReadableBytes> {
    let bytes: Bytes
    package private(set) var offset: Int
    let end: Int

    package init(_ bytes: Bytes, from offset: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        // Clamped into the bytes: every read is checked against `remaining` alone.
        self.offset = min(bytes.startIndex + max(0, offset), bytes.endIndex)
        self.end = max(self.offset, min(end.map { bytes.startIndex + $0 } ?? bytes.endIndex, bytes.endIndex))
    }

    var remaining: Int { max(0, end - offset) }

    mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String) throws(WormholeError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw truncated(what()) }
        // One load, checked above, rather than a bounds-checked read per byte.
        let at = offset - bytes.startIndex
        let value = bytes.withReadableBytes { $0.loadUnaligned(fromByteOffset: at, as: T.self) }
        offset += size
        return T(bigEndian: value)
    }

    mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(WormholeError) -> Bytes.SubSequence {
        guard count >= 0, remaining >= count else { throw truncated(what()) }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// The next `count` bytes as an archive that outlives the bytes read (``ReadableBytes/keptArchive(_:)``).
    mutating func readArchive(_ count: Int, _ what: @autoclosure () -> String) throws(WormholeError) -> ArchiveBytes {
        guard count >= 0, remaining >= count else { throw truncated(what()) }
        defer { offset += count }
        return bytes.keptArchive(offset..<(offset + count))
    }

    /// A `UInt32` length or count as another process wrote it, as an `Int`: `Int.max` where a 32-bit `Int` (watchOS)
    /// cannot hold it, which every caller's bound then refuses, rather than a trap on the conversion.
    mutating func readLength(_ what: @autoclosure () -> String) throws(WormholeError) -> Int {
        Int(exactly: try read(UInt32.self, what())) ?? .max
    }

    /// A `UInt32` count then that many bytes, refused above `limit`.
    mutating func readField(_ what: @autoclosure () -> String, limit: Int) throws(WormholeError) -> Bytes.SubSequence {
        let count = try readLength(what())
        guard count <= limit else { throw WormholeError(.corruptData, "\(what()) claims \(count) bytes, over \(limit)") }
        return try readBytes(count, what())
    }

    /// A `UInt32` count then that many bytes of UTF-8, which must be valid.
    mutating func readString(_ what: @autoclosure () -> String, limit: Int) throws(WormholeError) -> String {
        try readString(what(), limit: limit) { UTF8Text.string($0) }
    }

    /// ``readString(_:limit:)`` for a notification's name, found in `names` when it holds the same bytes.
    mutating func readName(_ what: @autoclosure () -> String, limit: Int, names: inout DecodedNames) throws(WormholeError)
        -> String
    {
        try readString(what(), limit: limit) { names.name($0) }
    }

    private mutating func readString(
        _ what: @autoclosure () -> String, limit: Int, _ decode: (UnsafeRawBufferPointer) -> String?
    ) throws(WormholeError) -> String {
        let count = try readLength(what())
        guard count <= limit else { throw WormholeError(.corruptData, "\(what()) claims \(count) bytes, over \(limit)") }
        guard remaining >= count else { throw truncated(what()) }
        let at = offset - bytes.startIndex
        offset += count
        let string = bytes.withReadableBytes { raw in decode(UnsafeRawBufferPointer(rebasing: raw[at..<(at + count)])) }
        guard let string else { throw WormholeError(.corruptData, "\(what()) is not valid UTF-8") }
        return string
    }

    /// A file's header: `magic`, a version byte that must be `version`, and three reserved bytes, not read. `what`
    /// names the kind of file in the errors ("has no lease header", "is a lease of version 2").
    mutating func readHeader(magic: [UInt8], version: UInt8, _ what: String) throws(WormholeError) {
        let found = try readBytes(magic.count, "\(what) header")
        guard found.elementsEqual(magic) else { throw WormholeError(.corruptData, "has no \(what) header") }
        let got = try read(UInt8.self, "\(what) version")
        guard got == version else { throw WormholeError(.corruptData, "is a \(what) of version \(got)") }
        _ = try readBytes(3, "\(what) header")
    }

    private func truncated(_ what: String) -> WormholeError {
        WormholeError(.corruptData, "\(what) is cut short at byte \(offset - bytes.startIndex) of \(end - bytes.startIndex)")
    }
}
