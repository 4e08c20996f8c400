import Dispatch
import Synchronization

/// A memory file a poster keeps for one connection and writes its large frames into again and again, so that a
/// frame too large for the socket costs a copy into pages already there rather than a new sealed file
/// (``SharedFrame``), whose fresh pages cost far more than the copy.
///
/// The file keeps its size (sealed against shrinking and growing, so no mapping of it can fault) and every page
/// of it is allocated; the poster maps it and writes a frame after an 8-byte mark, then sends the descriptor with
/// a message like a shared frame's, of its own kind:
/// ```
/// file:    mark:u64  frame
/// message: "WH"  version:u8  kind:u8 = 4  poster:u64  sequence:u64  size:u64
/// ```
/// The poster writes the mark as 0 with each frame. The listener takes the file only when it is such a memory
/// file and the mark is 0 (a file not written again since it was read is a sender replaying it), maps it once and
/// keeps the mapping for the next frames (``Kept``), copies the frame out (the poster may write the file again
/// once it is read, so nothing is used in place), and writes the mark as the sequence plus one. The poster writes
/// the file again only when it finds that mark; until then, and when a post goes to more listeners than the
/// files' budget covers, a large frame goes as a sealed shared frame, as before.
///
/// A listener that lies about the mark, or a sender that writes the file while it is read, spoils only frames
/// that it sent or was sent: what the listener copied out is decoded as any other bytes from another process.
///
/// Linux only (``isAvailable``), as shared frames are.
final class FrameFile: Sendable {
    static let kind: UInt8 = 4
    /// The bytes of the mark before the frame.
    static let markSize = 8
    /// The largest file a frame needs: room for the mark and the largest frame, in a whole number of pages.
    static let maximumSize = (markSize + SharedFrame.maximumSize + FileMapping.pageSize - 1) / FileMapping.pageSize * FileMapping.pageSize

    static var isAvailable: Bool { MemoryFile.isAvailable }

    /// The bytes of frame files this process holds, within ``Limits/maximumFrameFileBytes``.
    private static let held = Atomic<Int>(0)

    private let file: OwnedDescriptor
    private let mapping: SharedMapping
    /// The mark the listener writes once it has read the frame sent last; 0 while the file is free. Used under
    /// the lock of the link that holds the file.
    private let awaited = Atomic<UInt64>(0)
    /// When the frame sent last was sent, in uptime nanoseconds.
    private let sentAt = Atomic<UInt64>(0)

    /// A file with room for a frame of `size` bytes, rounded up to a quarter of the power of two above it (a
    /// larger frame seldom needs another file, and a quarter at most is spare), or nil when this process's frame
    /// files would pass ``Limits/maximumFrameFileBytes``.
    /// - Throws: when the file cannot be made or mapped (out of memory or descriptors).
    init?(forFrameOf size: Int) throws(WormholeError) {
        let needed = Self.markSize + size
        guard needed <= Self.maximumSize else { return nil }
        let power = 1 << (Int.bitWidth - (needed - 1).leadingZeroBitCount)
        let granule = max(FileMapping.pageSize, power / 4)
        let capacity = min((needed + granule - 1) / granule * granule, Self.maximumSize)
        guard Self.reserve(capacity) else { return nil }
        do throws(WormholeError) {
            let file = try MemoryFile.fixedSize(capacity)
            mapping = try SharedMapping(file.rawValue, count: capacity, writable: true)
            self.file = file
        } catch {
            Self.held.subtract(capacity, ordering: .relaxed)
            throw error
        }
    }

    deinit {
        Self.held.subtract(mapping.bytes.count, ordering: .relaxed)
    }

    private static func reserve(_ bytes: Int) -> Bool {
        let total = held.add(bytes, ordering: .relaxed).newValue
        guard total > Limits.maximumFrameFileBytes else { return true }
        held.subtract(bytes, ordering: .relaxed)
        return false
    }

    /// Whether `frame` fits.
    func canTake(_ frame: OutgoingFrame) -> Bool {
        Self.markSize + frame.count <= mapping.bytes.count
    }

    /// Whether the frame sent last has waited for its mark longer than `limit`.
    func hasWaited(longerThan limit: Interval) -> Bool {
        DispatchTime.now().uptimeNanoseconds &- sentAt.load(ordering: .relaxed) > limit.nanoseconds
    }

    /// Whether the listener has read the frame sent last (or none was sent): the file may be written again.
    func isFree() -> Bool {
        let awaited = awaited.load(ordering: .relaxed)
        guard awaited != 0 else { return true }
        var mark: UInt64 = 0
        let read = withUnsafeMutableBytes(of: &mark) { (bytes) -> Int? in
            try? Sys.preadAll(file.rawValue, into: bytes, at: 0)
        }
        guard read == Self.markSize, UInt64(bigEndian: mark) == awaited else { return false }
        // What the listener copied out before it wrote the mark is behind it: nothing written from here on
        // reaches its copy.
        atomicMemoryFence(ordering: .acquiring)
        self.awaited.store(0, ordering: .relaxed)
        return true
    }

    /// Writes `frame`, whose sequence must not be `UInt64.max` (its mark would read as a file not read), into the
    /// file, which must be free and able to take it (``canTake(_:)``), and sends the descriptor with its message
    /// over `socket`, without blocking.
    /// - Throws: as ``UnixSocket/send(_:_:)``, whose ``WormholeError/peerState`` says what became of the
    ///   listener; the file is free again then, since the listener did not get it.
    func send(_ frame: OutgoingFrame, over socket: CInt) throws(WormholeError) {
        let room = mapping.bytes
        room.storeBytes(of: UInt64(0), toByteOffset: 0, as: UInt64.self)
        try frame.withParts { head, userInfo in
            UnsafeMutableRawBufferPointer(rebasing: room[Self.markSize...]).copyMemory(from: head)
            UnsafeMutableRawBufferPointer(rebasing: room[(Self.markSize + head.count)...]).copyMemory(from: userInfo)
        }
        try SharedFrame.send(SharedFrame.message(for: frame, as: Self.kind), passing: file.rawValue, over: socket)
        // The sequence plus one, as the listener marks it.
        awaited.store(frame.frame.sequence &+ 1, ordering: .relaxed)
        sentAt.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }
}

extension FrameFile {
    /// The mappings a listener keeps of the frame files posters sent it, the one used longest ago dropped first.
    /// Each keeps its file (and the poster's pages) alive, so they are few.
    struct Kept {
        private struct Entry {
            let identity: FileIdentity
            let mapping: SharedMapping
        }

        let capacity: Int
        private var entries: [Entry] = []

        init(capacity: Int) {
            self.capacity = capacity
        }

        var count: Int { entries.count }

        /// The mapping of `file` (`size` bytes, which `identity` names): kept, or made and kept.
        mutating func mapping(of file: CInt, identity: FileIdentity, size: Int) throws(WormholeError) -> SharedMapping {
            if let index = entries.firstIndex(where: { $0.identity == identity }) {
                let entry = entries.remove(at: index)
                entries.append(entry)
                // The file was sealed at its size: a mapping of it has all of it.
                if entry.mapping.bytes.count == size { return entry.mapping }
                entries.removeLast()
            }
            let mapping = try SharedMapping(file, count: size, writable: false)
            if entries.count >= capacity { entries.removeFirst() }
            entries.append(Entry(identity: identity, mapping: mapping))
            return mapping
        }
    }

    /// Reads the frame a frame file's `message` announces from `file`, which the caller closes, through the
    /// mapping `kept` holds of it (made on first use), and marks it read.
    /// - Throws: ``WormholeError/Code/corruptData`` when the message, the file or the frame in it is not what
    ///   a poster sends.
    static func read(_ message: UnsafeRawBufferPointer, file: CInt, kept: inout Kept) throws(WormholeError) -> Frame {
        let announced = try SharedFrame.Announced(message)
        let size = announced.size
        // The seals first: asked of the kernel alone, before any call reaches the file's server.
        try MemoryFile.checkFixedSize(file)
        let status = try Sys.status(of: file)
        guard status.isRegularFile, status.size >= markSize + size, status.size <= maximumSize else {
            throw WormholeError(.corruptData, "frame file is not a regular file of \(markSize + size) to \(maximumSize) bytes")
        }
        // A sparse file would have this process allocate the pages its sender did not.
        guard status.allocatedBytes >= status.size else {
            throw WormholeError(.corruptData, "frame file of \(status.size) bytes is sparse")
        }
        guard status.preferredBlockSize == FileMapping.pageSize else {
            throw WormholeError(.corruptData, "frame file's blocks are not pages")
        }
        let mapping = try kept.mapping(of: file, identity: status.identity, size: status.size)
        // Read or refused, the poster may write the file again.
        defer { markRead(file, announced.sequence) }
        let bytes = UnsafeRawBufferPointer(mapping.bytes)
        guard bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self) == 0 else {
            throw WormholeError(.corruptData, "frame file was not written again since it was read: a sender is replaying it")
        }
        let frameBytes = UnsafeRawBufferPointer(rebasing: bytes[markSize..<(markSize + size)])
        let (frame, range) = try announced.frame(head: copy(frameBytes, 0..<min(size, Frame.maximumHeadSize)))
        return range.isEmpty ? frame : frame.with(userInfo: ArchiveBytes(copy(frameBytes, range)))
    }

    /// `range` of `bytes` in an array of their own.
    private static func copy(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: range.count) { buffer, count in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[range]))
            count = range.count
        }
    }

    /// Writes the mark that tells the poster its file was read. The file was found writable through `file`
    /// (``MemoryFile/checkFixedSize(_:)``); should the write fail all the same, the poster does not write the file
    /// again, and lets it go after ``Limits/frameFileWait``.
    private static func markRead(_ file: CInt, _ sequence: UInt64) {
        // The copies out of the mapping are done before the poster can see the mark.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        withUnsafeBytes(of: (sequence &+ 1).bigEndian) { mark in
            do throws(WormholeError) { try Sys.pwriteAll(file, mark, at: 0) } catch {}
        }
    }
}
