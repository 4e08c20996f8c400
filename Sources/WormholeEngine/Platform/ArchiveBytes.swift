/// The bytes of a userInfo archive: in an array (or part of one: the frame or record it was read with, which
/// then is not copied again, or the aligned part of an array a file was read into: ``read(_:from:at:)``), or
/// read-only in a mapped sealed memory file (``SharedFrame``), whose large `Data` values the decoder shares
/// instead of copying.
package struct ArchiveBytes: Sendable {
    private enum Storage {
        case array(ArraySlice<UInt8>)
        case mapped(FileMapping, offset: Int, count: Int)
    }

    private let storage: Storage

    package init(_ bytes: [UInt8]) {
        storage = .array(bytes[...])
    }

    /// Part of a larger array, which it keeps alive.
    package init(_ bytes: ArraySlice<UInt8>) {
        storage = .array(bytes)
    }

    /// `count` bytes of `mapping` from `offset`, which must lie within it.
    package init(_ mapping: FileMapping, offset: Int, count: Int) {
        storage = .mapped(mapping, offset: offset, count: count)
    }

    /// Where in an array the bytes read from a file begin: on this boundary, so that the kernel copies into them at
    /// full speed (on this project's VM a `pread(2)` of a memory file into memory 16 bytes past a 32-byte
    /// boundary, where an array's elements may begin, took six times as long).
    static let readAlignment = 64

    /// `count` bytes of `file` from `offset`, read with `pread(2)` into an array of their own (a part of it aligned
    /// to ``readAlignment``): all of them, or an error.
    /// - Throws: ``WormholeError/Code/corruptData`` when the file ends first; the read's error.
    package static func read(_ count: Int, from file: Descriptor, at offset: Int) throws(WormholeError) -> ArchiveBytes {
        var start = 0, read = 0
        var failure: WormholeError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count + readAlignment) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            start = (readAlignment - Int(bitPattern: UInt(bitPattern: base) % UInt(readAlignment))) % readAlignment
            buffer[..<start].initialize(repeating: 0)
            do throws(WormholeError) {
                read = try file.readAll(into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[start..<(start + count)])), at: offset)
            } catch {
                failure = error
            }
            initialized = start + read
        }
        if let failure { throw failure }
        guard read == count else {
            throw WormholeError(.corruptData, "file held \(read) of \(count) bytes at \(offset)")
        }
        // The array is never changed again, so its elements stay where they were read.
        return ArchiveBytes(bytes[start...])
    }

    package var count: Int {
        switch storage {
        case .array(let bytes): bytes.count
        case .mapped(_, _, let count): count
        }
    }

    /// The mapping that holds the bytes, for values that share them; nil for an array.
    package var mapping: FileMapping? {
        if case .mapped(let mapping, _, _) = storage { return mapping }
        return nil
    }

    package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
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
    package var array: [UInt8] {
        switch storage {
        case .array(let bytes): Array(bytes)
        case .mapped: withBytes { [UInt8]($0) }
        }
    }

    /// Whether `other` is known to hold the same bytes: two arrays compared, or the same bytes of one mapping.
    /// Bytes of two mappings are not compared: decoding them again costs less than comparing them.
    package func isKnownEqual(to other: ArchiveBytes) -> Bool {
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
