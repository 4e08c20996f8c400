import Synchronization

/// A memory file a poster keeps for one connection and writes its large frames into again and again, so that a
/// frame too large for the socket costs a copy into pages already there rather than a new sealed file
/// (``SharedFrame``), whose fresh pages cost far more than the copy.
///
/// The file keeps its size (sealed against shrinking and growing, so the poster's mapping of it cannot fault)
/// and every page of it is allocated; the poster maps it once and writes a frame after an 8-byte mark, then
/// sends the descriptor with a message like a shared frame's, of its own kind:
/// ```
/// file:    mark:u64  frame
/// message: "WH"  version:u8  kind:u8 = 4  poster:u64  sequence:u64  size:u64
/// ```
/// The poster writes the mark as 0 with each frame. The listener takes the file only when it is such a memory
/// file that it can write, and the mark is 0 (a file not written again since it was read is a sender replaying
/// it); it reads the frame out with `pread` (the poster may write the file again once it is read, so nothing is
/// used in place), and writes the mark as the sequence plus one. The poster writes the file again only when it
/// finds that mark. Until then (a file whose mark has not come within ``Limits/frameFileWait`` is let go and
/// another made), for a post to more than ``Limits/frameFileListeners`` listeners, and past this process's
/// budget of frame files, a large frame goes as a sealed shared frame, as before.
///
/// A listener that lies about the mark, or a sender that writes the file while it is read, spoils only frames
/// that it sent or was sent: what the listener read is decoded as any other bytes from another process.
///
/// Linux only (``isAvailable``), as shared frames are.
final class FrameFile: Sendable {
    static let kind: UInt8 = 4
    /// The bytes of the mark before the frame.
    static let markSize = 8
    /// The largest file a frame needs: room for the mark and the largest frame, in a whole number of pages.
    static let maximumSize =
        (markSize + SharedFrame.maximumSize + FileMapping.pageSize - 1) / FileMapping.pageSize * FileMapping.pageSize

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

    /// A file with room for a frame of `size` bytes, rounded up to a multiple of a quarter of the power of two
    /// above it (so a slightly larger frame seldom needs another file, and the room spare is under that quarter:
    /// a 1 MiB frame gets 1.5 MiB), or nil when this process's frame files would pass
    /// ``Limits/maximumFrameFileBytes``.
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
            mapping = try SharedMapping(file.descriptor, count: capacity)
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
        Sys.uptimeNanoseconds &- sentAt.load(ordering: .relaxed) > limit.nanoseconds
    }

    /// Whether the listener has read the frame sent last (or none was sent): the file may be written again.
    func isFree() -> Bool {
        let awaited = awaited.load(ordering: .relaxed)
        guard awaited != 0 else { return true }
        var mark: UInt64 = 0
        let read = withUnsafeMutableBytes(of: &mark) { (bytes) -> Int? in
            try? file.descriptor.readAll(into: bytes, at: 0)
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
    func send(_ frame: OutgoingFrame, over socket: Descriptor) throws(WormholeError) {
        let room = mapping.bytes
        room.storeBytes(of: UInt64(0), toByteOffset: 0, as: UInt64.self)
        try frame.withParts { head, userInfo in
            UnsafeMutableRawBufferPointer(rebasing: room[Self.markSize...]).copyMemory(from: head)
            UnsafeMutableRawBufferPointer(rebasing: room[(Self.markSize + head.count)...]).copyMemory(from: userInfo)
        }
        try SharedFrame.send(SharedFrame.message(for: frame, as: Self.kind), passing: file.descriptor, over: socket)
        // The sequence plus one, as the listener marks it.
        awaited.store(frame.frame.sequence &+ 1, ordering: .relaxed)
        sentAt.store(Sys.uptimeNanoseconds, ordering: .relaxed)
    }
}

extension FrameFile {
    /// Reads the frame a frame file's `message` announces from `file`, which the caller closes, and marks it read.
    /// The frame is read with `pread(2)` rather than through a mapping: the file stays writable by its sender, who
    /// could punch holes in it after it was checked, and a mapping's reads would allocate pages for those holes
    /// (charged to this process, and kept while the sender keeps the file), where a read takes them as zeros.
    /// - Throws: ``WormholeError/Code/corruptData`` when the message, the file or the frame in it is not what
    ///   a poster sends.
    static func read(_ message: UnsafeRawBufferPointer, file: Descriptor) throws(WormholeError) -> Frame {
        let announced = try SharedFrame.Announced(message)
        let size = announced.size
        // The seals first: asked of the kernel alone, before any call reaches the file's server.
        try MemoryFile.checkFixedSize(file)
        let status = try file.status()
        guard status.isRegularFile, status.size >= markSize + size, status.size <= maximumSize else {
            throw WormholeError(.corruptData, "frame file is not a regular file of \(markSize + size) to \(maximumSize) bytes")
        }
        // A sparse file costs its sender nothing and this process a full read.
        guard status.allocatedBytes >= status.size else {
            throw WormholeError(.corruptData, "frame file of \(status.size) bytes is sparse")
        }
        // Read or refused, the poster may write the file again.
        defer { markRead(file, announced.sequence) }
        var mark: UInt64 = 0
        let read = try withUnsafeMutableBytes(of: &mark) { (bytes) throws(WormholeError) in try file.readAll(into: bytes, at: 0) }
        guard read == markSize, mark == 0 else {
            throw WormholeError(.corruptData, "frame file was not written again since it was read: a sender is replaying it")
        }
        let head = try ArchiveBytes.read(min(size, Frame.maximumHeadSize), from: file, at: markSize).array
        let (frame, range) = try announced.frame(head: head)
        guard !range.isEmpty else { return frame }
        return frame.with(userInfo: try ArchiveBytes.read(range.count, from: file, at: markSize + range.lowerBound))
    }

    /// Writes the mark that tells the poster its file was read. The file was found writable through `file`
    /// (``MemoryFile/checkFixedSize(_:)``); should the write fail all the same, the poster does not write the file
    /// again, and lets it go after ``Limits/frameFileWait``.
    private static func markRead(_ file: Descriptor, _ sequence: UInt64) {
        // The reads are done before the poster can see the mark.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        withUnsafeBytes(of: (sequence &+ 1).bigEndian) { mark in
            do throws(WormholeError) { try file.writeAll(mark, at: 0) } catch {}
        }
    }
}
