/// The bytes of a userInfo archive: in an array (or part of one: the frame or record it was read with, which
/// then is not copied again), or read-only in a mapped sealed memory file (``SharedFrame``), whose large `Data`
/// values the decoder shares instead of copying.
struct ArchiveBytes: Sendable {
    private enum Storage {
        case array(ArraySlice<UInt8>)
        case mapped(FileMapping, offset: Int, count: Int)
    }

    private let storage: Storage

    init(_ bytes: [UInt8]) {
        storage = .array(bytes[...])
    }

    /// Part of a larger array, which it keeps alive.
    init(_ bytes: ArraySlice<UInt8>) {
        storage = .array(bytes)
    }

    /// `count` bytes of `mapping` from `offset`, which must lie within it.
    init(_ mapping: FileMapping, offset: Int, count: Int) {
        storage = .mapped(mapping, offset: offset, count: count)
    }

    var count: Int {
        switch storage {
        case .array(let bytes): bytes.count
        case .mapped(_, _, let count): count
        }
    }

    /// The mapping that holds the bytes, for values that share them; nil for an array.
    var mapping: FileMapping? {
        if case .mapped(let mapping, _, _) = storage { return mapping }
        return nil
    }

    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch storage {
        case .array(let bytes):
            return try bytes.withUnsafeBytes { raw in Result { () throws(E) -> R in try body(raw) } }.get()
        case .mapped(let mapping, let offset, let count):
            return try withExtendedLifetime(mapping) { () throws(E) -> R in
                try body(UnsafeRawBufferPointer(rebasing: mapping.bytes[offset..<(offset + count)]))
            }
        }
    }

    /// The bytes in an array of their own: themselves, or a copy of part of an array or of the mapped ones.
    var array: [UInt8] {
        switch storage {
        case .array(let bytes): Array(bytes)
        case .mapped: withBytes { [UInt8]($0) }
        }
    }

    /// Whether `other` is known to hold the same bytes: two arrays compared, or the same bytes of one mapping.
    /// Bytes of two mappings are not compared: decoding them again costs less than comparing them.
    func isKnownEqual(to other: ArchiveBytes) -> Bool {
        switch (storage, other.storage) {
        case (.array(let bytes), .array(let others)):
            return bytes == others
        case (.mapped(let mapping, let offset, let count), .mapped(let others, let otherOffset, let otherCount)):
            return mapping === others && offset == otherOffset && count == otherCount
        default:
            return false
        }
    }
}
