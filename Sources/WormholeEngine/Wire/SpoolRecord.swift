/// A spool segment: an append-only file that one writer fills with frames, big-endian throughout.
/// ```
/// header:  "WHSG"  version:u8  0:u8 0:u8 0:u8  key:u64           (16 bytes)
/// record:  length:u32  check:u32  frame                           (check: CRC-32 of frame, mixed with key)
/// ```
/// The key is random per segment, so no payload can carry a record that passes for one of this file's, and a
/// reader never searches for the next record after a bad one: it stops there. A record cut short at the end is
/// a write in progress or a writer that died mid-write, never a notification.
package enum SpoolRecord {
    static let magic = Array("WHSG".utf8)
    static let version: UInt8 = 1
    package static let headerSize = 16
    package static let recordHeaderSize = 8
    /// The largest frame a record may hold: the largest userInfo, two names and the frame's header.
    package static let maximumFrameSize = Frame.maximumSize

    package static func header(key: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize)
        writer.write(magic)
        writer.write([version, 0, 0, 0])
        writer.write(key)
        return writer.bytes
    }

    static func encode(_ frame: [UInt8], key: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: recordHeaderSize + frame.count)
        writer.write(UInt32(frame.count))
        writer.write(check(frame[...], key: key))
        writer.write(frame)
        return writer.bytes
    }

    /// A record's header for a frame given in two parts (its head, then its userInfo), which follow it as they
    /// are: a large frame is never copied into one buffer to be spooled.
    package static func header(head: UnsafeRawBufferPointer, rest: UnsafeRawBufferPointer, key: UInt64) -> [UInt8] {
        let count = head.count + rest.count
        let crc = CRC32.checksum(rest, continuing: CRC32.checksum(head))
        var writer = ByteWriter(capacity: recordHeaderSize)
        writer.write(UInt32(count))
        writer.write(crc ^ mix(key, count))
        return writer.bytes
    }

    /// A whole segment holding `frames`, under a fresh key.
    package static func segment(_ frames: [[UInt8]]) -> [UInt8] {
        let key = UInt64.random(in: 0...UInt64.max)
        var bytes = header(key: key)
        for frame in frames { bytes += encode(frame, key: key) }
        return bytes
    }

    /// The frame's CRC-32 mixed with the segment's key and the length: without the key, no writer of a payload
    /// can make bytes that pass.
    static func check(_ frame: ArraySlice<UInt8>, key: UInt64) -> UInt32 {
        CRC32.checksum(frame) ^ mix(key, frame.count)
    }

    private static func mix(_ key: UInt64, _ count: Int) -> UInt32 {
        let mixed = (key ^ UInt64(count)) &* 0x9E37_79B9_7F4A_7C15
        return UInt32(truncatingIfNeeded: mixed >> 32)
    }

    /// The key of a segment's header, or nil when the header is not one.
    package static func key(ofHeader bytes: ArraySlice<UInt8>) -> UInt64? {
        guard bytes.count == headerSize, bytes.starts(with: magic), bytes[bytes.startIndex + 4] == version else {
            return nil
        }
        var reader = ByteReader(Array(bytes), from: 8)
        return try? reader.read(UInt64.self, "key")
    }

    /// A record's header, its frame's length and its check, from the bytes at the record's start (big-endian);
    /// nil when there are fewer than ``recordHeaderSize``. The length is as written (`Int.max` when a 32-bit `Int`,
    /// as on watchOS, cannot hold it): the reader bounds it.
    package static func recordHeader(_ bytes: ArraySlice<UInt8>) -> (length: Int, check: UInt32)? {
        guard bytes.count >= recordHeaderSize else { return nil }
        func word(_ at: Int) -> UInt32 {
            bytes[(bytes.startIndex + at)..<(bytes.startIndex + at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
        }
        return (Int(exactly: word(0)) ?? .max, word(4))
    }

    /// How a segment ended.
    package enum End: Equatable {
        /// After its last whole record.
        case whole
        /// In a record cut short: a write in progress or a writer that died mid-write; nothing was posted there.
        case torn
        /// In bytes that are no record: the rest of the segment was skipped.
        case damaged(String)
        /// Before its first byte: this process had no descriptor or memory to open it now. The file stays for a
        /// later reader.
        case unreadable(String)
    }

    /// Reads a segment record by record from `source`, hands each frame to `body` in order, and says how the
    /// segment ended (``Records``).
    static func readRecords<Source: SegmentBytes>(_ source: inout Source, _ body: ([UInt8]) -> Void) -> End {
        var records = Records()
        while true {
            switch records.next(in: &source) {
            case .frame(let frame): body(frame)
            case .end(let end): return end
            }
        }
    }

    /// Where a reader is in a segment: the one parser of segments, whether they are read from a file (a spool's,
    /// through a window) or lie in memory (``decodeAll(_:)``), one record at a time, so that a reader may stop
    /// between two and go on later. A record's length is bounded before anything is read for it, and the last
    /// record failing its check is torn (its writer may still be copying it in, and will write it again); any
    /// other is damaged, and nothing after it is read.
    package struct Records {
        package enum Step {
            case frame([UInt8])
            /// The segment ended here; every later step says the same.
            case end(End)
        }

        /// The segment's key, once its header was read.
        private var key: UInt64?
        private var offset = 0
        private var ended: End?

        package init() {}

        /// The next record's frame in `source`, or how the segment ended.
        package mutating func next<Source: SegmentBytes>(in source: inout Source) -> Step {
            if let ended { return .end(ended) }
            let step = read(&source)
            if case .end(let end) = step { ended = end }
            return step
        }

        private mutating func read<Source: SegmentBytes>(_ source: inout Source) -> Step {
            let size = source.size
            guard let key else {
                guard size > 0 else { return .end(.whole) }
                guard let header = source.bytes(at: 0, count: headerSize) else { return .end(.torn) }
                guard let found = SpoolRecord.key(ofHeader: header) else { return .end(.damaged("no segment header")) }
                key = found
                offset = headerSize
                return read(&source)
            }
            guard offset < size else { return .end(.whole) }
            guard let head = source.bytes(at: offset, count: recordHeaderSize), let (length, check) = recordHeader(head)
            else { return .end(.torn) }
            guard length <= maximumFrameSize else { return .end(.damaged("record at byte \(offset) claims \(length) bytes")) }
            let end = offset + recordHeaderSize + length
            guard end <= size, let frame = source.frame(at: offset + recordHeaderSize, count: length) else { return .end(.torn) }
            guard SpoolRecord.check(frame[...], key: key) == check else {
                return .end(end == size ? .torn : .damaged("record at byte \(offset) fails its check"))
            }
            offset = end
            return .frame(frame)
        }
    }

    /// The frames of a whole segment in memory, and 1 when it ends in anything but whole records (0 otherwise).
    package static func decodeAll(_ bytes: [UInt8]) -> (frames: [[UInt8]], damaged: Int) {
        var source = SegmentInMemory(bytes: bytes)
        var frames: [[UInt8]] = []
        let end = readRecords(&source) { frames.append($0) }
        return (frames, end == .whole ? 0 : 1)
    }
}

/// Where ``SpoolRecord/readRecords(_:_:)`` finds a segment's bytes.
package protocol SegmentBytes {
    /// The segment's length in bytes.
    var size: Int { get }
    /// `count` bytes at `offset`, valid until the next call; nil when the segment holds fewer.
    mutating func bytes(at offset: Int, count: Int) -> ArraySlice<UInt8>?
    /// A frame's `count` bytes at `offset`, in an array of their own; nil when the segment holds fewer.
    mutating func frame(at offset: Int, count: Int) -> [UInt8]?
}

/// A segment that lies whole in memory.
struct SegmentInMemory: SegmentBytes {
    let bytes: [UInt8]

    var size: Int { bytes.count }

    func bytes(at offset: Int, count: Int) -> ArraySlice<UInt8>? {
        guard offset >= 0, count >= 0, count <= bytes.count - offset else { return nil }
        return bytes[offset..<(offset + count)]
    }

    func frame(at offset: Int, count: Int) -> [UInt8]? {
        bytes(at: offset, count: count).map(Array.init)
    }
}
