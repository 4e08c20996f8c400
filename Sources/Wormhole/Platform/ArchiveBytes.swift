/// The bytes of a userInfo archive: in an array (or part of one: the frame or record it was read with, which
/// then is not copied again), read from a file into memory of their own (``read(_:from:at:)``), or read-only in
/// a mapped sealed memory file (``SharedFrame``), whose large `Data` values the decoder shares instead of
/// copying.
struct ArchiveBytes: Sendable {
    private enum Storage {
        case array(ArraySlice<UInt8>)
        case read(Owned)
        case mapped(FileMapping, offset: Int, count: Int)
    }

    /// Memory of its own, freed with the last reference, aligned so that the kernel copies into it at full
    /// speed: on this project's VM a `pread(2)` of a memory file into memory 16 bytes past a 32-byte boundary
    /// (where an array's elements may begin) took six times as long.
    fileprivate final class Owned: Sendable {
        static let alignment = 64
        // Safe because: written once, by the read that makes it, before it is shared.
        nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer

        init(count: Int) {
            bytes = .allocate(byteCount: count, alignment: Self.alignment)
        }

        deinit {
            bytes.deallocate()
        }
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

    /// `count` bytes of `file` from `offset`, read with `pread(2)` into memory of their own: all of them, or an
    /// error.
    /// - Throws: ``WormholeError/Code/corruptData`` when the file ends first; the read's error.
    static func read(_ count: Int, from file: CInt, at offset: Int) throws(WormholeError) -> ArchiveBytes {
        guard count > 0 else { return ArchiveBytes([]) }
        let owned = Owned(count: count)
        let read = try Sys.preadAll(file, into: owned.bytes, at: offset)
        guard read == count else {
            throw WormholeError(.corruptData, "file held \(read) of \(count) bytes at \(offset)")
        }
        return ArchiveBytes(storage: .read(owned))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    var count: Int {
        switch storage {
        case .array(let bytes): bytes.count
        case .read(let owned): owned.bytes.count
        case .mapped(_, _, let count): count
        }
    }

    /// The mapping that holds the bytes, for values that share them; nil for an array or a read.
    var mapping: FileMapping? {
        if case .mapped(let mapping, _, _) = storage { return mapping }
        return nil
    }

    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch storage {
        case .array(let bytes):
            return try bytes.withUnsafeBytes { raw in Result { () throws(E) -> R in try body(raw) } }.get()
        case .read(let owned):
            return try withExtendedLifetime(owned) { () throws(E) -> R in try body(UnsafeRawBufferPointer(owned.bytes)) }
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
        case .read, .mapped: withBytes { [UInt8]($0) }
        }
    }

    /// Whether `other` is known to hold the same bytes: two arrays compared, or the same bytes of one read or
    /// mapping. Bytes of two reads or mappings are not compared: decoding them again costs less than comparing
    /// them.
    func isKnownEqual(to other: ArchiveBytes) -> Bool {
        switch (storage, other.storage) {
        case (.array(let bytes), .array(let others)):
            return bytes == others
        case (.read(let owned), .read(let others)):
            return owned === others
        case (.mapped(let mapping, let offset, let count), .mapped(let others, let otherOffset, let otherCount)):
            return mapping === others && offset == otherOffset && count == otherCount
        default:
            return false
        }
    }
}
