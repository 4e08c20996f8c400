/// A frame too large for the socket, passed to a running listener as a sealed memory file instead of written
/// to its spool: the poster writes the frame into a `memfd`, seals it against shrinking, growing and writing,
/// and sends the descriptor (`SCM_RIGHTS`) with a small message in the frame's place in the connection:
/// ```
/// "WH"  version:u8  kind:u8 = 3  poster:u64  sequence:u64  size:u64
/// ```
/// The listener takes the file only when it is what the message says: a regular file of exactly `size` bytes
/// (at most ``maximumSize``) that carries those seals, so a poster can neither change it while it is read nor
/// truncate it under a mapping; it reads the frame's head with `pread`, then maps the file (reading it with
/// `pread` where it cannot be mapped), so that a large userInfo is not copied at all, and decodes the frame like
/// any other, which must name the same poster and sequence. The descriptor is closed on every path.
///
/// Linux only (``isAvailable``): elsewhere large frames go through the spool as before.

enum SharedFrame {
    static let kind: UInt8 = 3
    static let messageSize = Frame.headerSize + 8
    /// The largest frame passed this way: a userInfo of ``GroupNotificationCenter/maximumPayloadSize`` with the
    /// longest name and object.
    static let maximumSize = Frame.maximumSize


    static var isAvailable: Bool { MemoryFile.isAvailable }

    /// Sends the descriptor of `frame`'s sealed memory file (made on first use, and shared by every listener
    /// the post goes to) with the message that stands for the frame over `socket`, without blocking. The
    /// listener's copy of the descriptor lives until it has read the file.
    /// - Throws: as ``UnixSocket/send(_:_:)``, whose ``WormholeError/peerState`` says what became of the
    ///   listener; or the memory file's error (out of memory or descriptors), a ``PeerState/failed``.
    static func send(_ frame: OutgoingFrame, over socket: Descriptor) throws(WormholeError) {
        try send(message(for: frame, as: kind), passing: frame.sharedDescriptor(), over: socket)
    }

    /// The message that stands for `frame` in the connection, as a message of `kind` (this one's, or a frame
    /// file's: ``FrameFile``).
    static func message(for frame: OutgoingFrame, as kind: UInt8) -> [UInt8] {
        var message = frame.frame.encodedHeader(as: kind)
        withUnsafeBytes(of: UInt64(frame.count).bigEndian) { message += $0 }
        return message
    }

    static func send(_ message: [UInt8], passing file: Descriptor, over socket: Descriptor) throws(WormholeError) {
        try message.withRawBytes { (bytes) throws(WormholeError) in try socket.send(bytes, passing: file) }
    }

    /// What a shared frame's or a frame file's `message` announces: whose frame, and its size.
    struct Announced {
        let poster: UInt64
        let sequence: UInt64
        let size: Int

        /// - Throws: ``WormholeError/Code/corruptData`` when `message` is not what a poster sends.
        init(_ message: UnsafeRawBufferPointer) throws(WormholeError) {
            guard message.count == messageSize, let header = Frame.Header(message), header.version == Frame.version else {
                throw WormholeError(.corruptData, "shared frame message of \(message.count) bytes is malformed")
            }
            let declared = UInt64(bigEndian: message.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
            guard declared >= UInt64(Frame.headerSize), declared <= UInt64(maximumSize) else {
                throw WormholeError(.corruptData, "shared frame declares \(declared) bytes, over the \(maximumSize)-byte limit")
            }
            poster = header.poster
            sequence = header.sequence
            size = Int(declared)
        }

        /// The frame whose first bytes (up to ``Frame/maximumHeadSize``, or its whole size) are `head`, without its
        /// userInfo, and where in the frame its userInfo lies.
        /// - Throws: ``WormholeError/Code/corruptData`` unless it is the frame announced, and its userInfo ends it.
        func frame(head: [UInt8]) throws(WormholeError) -> (frame: Frame, userInfo: Range<Int>) {
            var reader = ByteReader(head)
            let frame = try Frame(head: &reader)
            guard frame.kind == .notification, frame.poster == poster, frame.sequence == sequence else {
                throw WormholeError(.corruptData, "shared frame's file holds another frame than its message names")
            }
            let length = try Frame.userInfoLength(&reader)
            let offset = reader.offset
            // The head was read from within the frame, so `offset` is at most `size`.
            guard length == size - offset else {
                throw WormholeError(.corruptData, "shared frame's userInfo of \(length) bytes at \(offset) does not end its \(size)-byte frame")
            }
            return (frame, offset..<size)
        }
    }

    /// A memory file holding a frame, `head` then `userInfo`, sealed against writing, growing and shrinking.
    static func makeFile(head: [UInt8], userInfo: ArchiveBytes?) throws(WormholeError) -> OwnedDescriptor {
        try MemoryFile.sealed { (file) throws(WormholeError) in
            try head.withRawBytes { (bytes) throws(WormholeError) in try file.writeAll(bytes, at: 0) }
            try userInfo?.withBytes { (bytes) throws(WormholeError) in try file.writeAll(bytes, at: head.count) }
        }
    }

    /// The files of the last shared frames a listener read. A poster makes a new file for every post, so a file
    /// seen again is a sender replaying one it paid for once, to make the listener read it again and again.
    typealias RecentFiles = RecentRing<FileIdentity>

    /// Reads the frame a shared frame's `message` announces from `file`, which the caller closes, unless `recent`
    /// holds the file already; a file read whole joins `recent`.
    /// - Throws: ``WormholeError/Code/corruptData`` when the message, the file or the frame in it is not what
    ///   a poster sends.
    static func read(_ message: UnsafeRawBufferPointer, file: Descriptor, recent: inout RecentFiles) throws(WormholeError) -> Frame {
        let announced = try Announced(message)
        let size = announced.size
        // The seals first: asked of the kernel alone, before any call reaches the file's server.
        try MemoryFile.checkSealed(file)
        let status = try file.status()
        guard status.isRegularFile, status.size == size else {
            throw WormholeError(.corruptData, "shared frame's descriptor is not a regular file of \(size) bytes")
        }
        // A sparse file costs its sender nothing and this process a full read: refused.
        guard status.allocatedBytes >= size else {
            throw WormholeError(.corruptData, "shared frame's file of \(size) bytes is sparse")
        }
        guard !recent.contains(status.identity) else {
            throw WormholeError(.corruptData, "shared frame's file was read before: a sender is replaying it")
        }
        let (frame, range) = try announced.frame(head: ArchiveBytes.read(min(size, Frame.maximumHeadSize), from: file, at: 0).array)
        let whole = range.isEmpty ? frame : frame.with(userInfo: try userInfo(
            of: file, size: size, at: range.lowerBound, count: range.count, mappable: status.preferredBlockSize == FileMapping.pageSize))
        recent.insert(status.identity)
        return whole
    }

    /// The userInfo of a checked shared frame's `file`: mapped, so that large `Data` values decoded from it share
    /// its pages (its seals keep it from changing or shrinking under the mapping); read when it is not
    /// `mappable` (its blocks are not pages) or cannot be mapped.
    private static func userInfo(of file: Descriptor, size: Int, at offset: Int, count: Int, mappable: Bool)
        throws(WormholeError) -> ArchiveBytes
    {
        if mappable {
            do throws(WormholeError) {
                return ArchiveBytes(try FileMapping(file, count: size), offset: offset, count: count)
            } catch {
                Log.warning("shared frame read instead of mapped: \(error)")
            }
        }
        return try ArchiveBytes.read(count, from: file, at: offset)
    }
}
