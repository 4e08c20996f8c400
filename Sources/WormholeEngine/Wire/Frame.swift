/// One notification as it crosses a socket or sits in a spool.
///
/// Layout, all integers big-endian:
/// ```
/// "WH"  version:u8  kind:u8  poster:u64  sequence:u64
/// name: u32 length + UTF-8
/// hasObject:u8  [object: u32 length + UTF-8]
/// userInfo: u32 length + archive, compact or keyed (length 0: no userInfo)
/// ```
/// A `nudge` frame has only the header: it wakes a listener to look at its spool.
package struct Frame: Sendable {
    package enum Kind: UInt8, Sendable {
        case notification = 1
        case nudge = 2
    }

    package static let version: UInt8 = 1
    package static let headerSize = 20
    /// The longest notification name or object accepted, in UTF-8 bytes.
    static let maximumNameLength = Limits.maximumNameLength
    /// The largest frame: the largest userInfo, the longest name and object, and their headers.
    package static let maximumSize = Limits.maximumPayloadSize + 2 * maximumNameLength + 64

    package let kind: Kind
    package let poster: UInt64
    package let sequence: UInt64
    /// The frame's strings and archive, in place: on 64-bit platforms a name and an object of up to 15 UTF-8
    /// bytes read from the wire are held in their strings, so a copy of such a frame without userInfo retains
    /// nothing; and no frame costs an object of its own to make and free (which each did, on each side, when
    /// they were held in one: that cost more than the retains it saved, even for long names with a userInfo).
    private let contents: Contents

    package var name: String { contents.name }
    package var object: String? { contents.object }
    /// The archive of userInfo, or nil when the notification has none.
    package var userInfo: ArchiveBytes? { contents.userInfo }

    private struct Contents: Sendable {
        let name: String
        let object: String?
        let userInfo: ArchiveBytes?

        /// A nudge's: no name, no object, no userInfo.
        static let none = Contents(name: "", object: nil, userInfo: nil)
    }

    package static func nudge(from poster: UInt64) -> Frame {
        Frame(kind: .nudge, poster: poster, sequence: 0, contents: .none)
    }

    /// The frame with `userInfo` as its archive.
    package func with(userInfo: ArchiveBytes) -> Frame {
        Frame(kind: kind, poster: poster, sequence: sequence, contents: Contents(name: name, object: object, userInfo: userInfo))
    }

    package func encoded() -> [UInt8] { encoded(withUserInfo: true) }

    /// The bytes the frame takes, as encoded (its userInfo's, mapped or not, included).
    package var byteCount: Int {
        Self.headerSize + 4 + name.utf8.count + 1 + (object.map { 4 + $0.utf8.count } ?? 0) + 4 + (userInfo?.count ?? 0)
    }

    /// The frame without its userInfo's bytes, which follow it (its length included): what a large frame is
    /// written as, head first, without copying the userInfo into a frame.
    package func encodedHead() -> [UInt8] { encoded(withUserInfo: false) }

    /// Writes the whole frame into `raw`, which holds at least ``encodedSize`` bytes; returns how many it wrote
    /// (``encodedSize``). For memory the caller keeps: an array costs more to make than the frame to write.
    package func encode(into raw: UnsafeMutableRawBufferPointer) -> Int { write(into: raw, withUserInfo: true) }

    private func encoded(withUserInfo: Bool) -> [UInt8] {
        let size = withUserInfo ? encodedSize : encodedSize - (kind == .notification ? userInfo?.count ?? 0 : 0)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = write(into: UnsafeMutableRawBufferPointer(buffer), withUserInfo: withUserInfo)
        }
    }

    private func write(into raw: UnsafeMutableRawBufferPointer, withUserInfo: Bool) -> Int {
        var name = name, object = object
        return name.withUTF8 { name in
            guard let object else { return write(name: name, object: nil, withUserInfo: withUserInfo, into: raw) }
            var copy = object
            return copy.withUTF8 { write(name: name, object: $0, withUserInfo: withUserInfo, into: raw) }
        }
    }

    /// Writes the frame in one pass into `raw`, which has room for it; returns how many bytes it wrote.
    private func write(
        name: UnsafeBufferPointer<UInt8>, object: UnsafeBufferPointer<UInt8>?, withUserInfo: Bool,
        into raw: UnsafeMutableRawBufferPointer
    ) -> Int {
        var offset = writeHeader(into: raw)
        guard kind == .notification else { return offset }
        Self.writeField(name, into: raw, at: &offset)
        raw[offset] = object == nil ? 0 : 1
        offset += 1
        if let object { Self.writeField(object, into: raw, at: &offset) }
        let archiveCount = userInfo?.count ?? 0
        raw.storeBytes(of: UInt32(truncatingIfNeeded: archiveCount).bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
        if withUserInfo, let userInfo {
            userInfo.withBytes { UnsafeMutableRawBufferPointer(rebasing: raw[offset...]).copyMemory(from: $0) }
            offset += archiveCount
        }
        return offset
    }

    /// The size of the encoded frame, without encoding it.
    package var encodedSize: Int {
        guard kind == .notification else { return Self.headerSize }
        return Self.headerSize + 4 + name.utf8.count + 1 + (object.map { 4 + $0.utf8.count } ?? 0) + 4 + (userInfo?.count ?? 0)
    }

    /// A `UInt32` length, then the bytes.
    private static func writeField(_ bytes: UnsafeBufferPointer<UInt8>, into raw: UnsafeMutableRawBufferPointer, at offset: inout Int) {
        raw.storeBytes(of: UInt32(truncatingIfNeeded: bytes.count).bigEndian, toByteOffset: offset, as: UInt32.self)
        offset += 4
        UnsafeMutableRawBufferPointer(rebasing: raw[offset...]).copyMemory(from: UnsafeRawBufferPointer(bytes))
        offset += bytes.count
    }

    /// The 20-byte header alone, marked as `kind`: what stands for the frame where it travels another way.
    package func encodedHeader(as kind: UInt8) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.headerSize) { buffer, count in
            count = writeHeader(into: UnsafeMutableRawBufferPointer(buffer))
            buffer[3] = kind
        }
    }

    /// The 20-byte header; returns its size.
    private func writeHeader(into raw: UnsafeMutableRawBufferPointer) -> Int {
        raw[0] = UInt8(ascii: "W")
        raw[1] = UInt8(ascii: "H")
        raw[2] = Self.version
        raw[3] = kind.rawValue
        raw.storeBytes(of: poster.bigEndian, toByteOffset: 4, as: UInt64.self)
        raw.storeBytes(of: sequence.bigEndian, toByteOffset: 12, as: UInt64.self)
        return Self.headerSize
    }

    /// Decodes a frame, checking every length against the bytes that are there. From an array (a spool record),
    /// the frame keeps the array alive for its userInfo instead of a copy; from a buffer that is reused (a socket's
    /// receive slot), only the userInfo is copied.
    /// - Throws: ``WormholeError/Code/corruptData`` saying what is wrong.
    package init(decoding bytes: some ReadableBytes) throws(WormholeError) {
        var names = DecodedNames(keeps: false)
        try self.init(decoding: bytes, names: &names)
    }

    /// ``init(decoding:)``, with the name found in `names` when it holds the same bytes (a receive thread's).
    package init(decoding bytes: some ReadableBytes, names: inout DecodedNames) throws(WormholeError) {
        var reader = ByteReader(bytes)
        let head = try Self.readHead(&reader, names: &names)
        guard head.kind == .notification else {
            self.init(kind: head.kind, poster: head.poster, sequence: head.sequence, contents: .none)
            return
        }
        let count = try Self.userInfoLength(&reader)
        let userInfo = count == 0 ? nil : try reader.readArchive(count, "userInfo")
        guard reader.remaining == 0 else {
            throw WormholeError(.corruptData, "frame has \(reader.remaining) bytes after its end")
        }
        self.init(
            kind: head.kind, poster: head.poster, sequence: head.sequence,
            contents: Contents(name: head.name, object: head.object, userInfo: userInfo))
    }

    /// The most bytes a notification frame holds before its userInfo: its head, which ``init(head:)`` reads.
    package static let maximumHeadSize = headerSize + 4 + maximumNameLength + 1 + 4 + maximumNameLength + 4

    /// Reads a frame's head: everything but the userInfo's length and bytes, which follow it.
    package init(head reader: inout ByteReader<some ReadableBytes>) throws(WormholeError) {
        var names = DecodedNames(keeps: false)
        let head = try Self.readHead(&reader, names: &names)
        self.init(
            kind: head.kind, poster: head.poster, sequence: head.sequence,
            contents: head.kind == .notification ? Contents(name: head.name, object: head.object, userInfo: nil) : .none)
    }

    /// What ``init(head:)`` reads, with an error for each way it can be wrong.
    private static func readHead(_ reader: inout ByteReader<some ReadableBytes>, names: inout DecodedNames) throws(WormholeError)
        -> (kind: Kind, poster: UInt64, sequence: UInt64, name: String, object: String?)
    {
        let bytes = reader.bytes
        guard reader.remaining >= Self.headerSize, bytes[reader.offset] == UInt8(ascii: "W"),
            bytes[reader.offset + 1] == UInt8(ascii: "H")
        else {
            throw WormholeError(.corruptData, "frame of \(reader.remaining) bytes does not start with a Wormhole header")
        }
        _ = try reader.readBytes(2, "magic")
        let version = try reader.read(UInt8.self, "version")
        guard version == Self.version else { throw WormholeError(.corruptData, "frame has unknown version \(version)") }
        let rawKind = try reader.read(UInt8.self, "kind")
        guard let kind = Kind(rawValue: rawKind) else { throw WormholeError(.corruptData, "frame has unknown kind \(rawKind)") }
        let poster = try reader.read(UInt64.self, "poster")
        let sequence = try reader.read(UInt64.self, "sequence")
        guard kind == .notification else { return (kind, poster, sequence, "", nil) }
        let name = try reader.readName("name", limit: Self.maximumNameLength, names: &names)
        guard !name.isEmpty else { throw WormholeError(.corruptData, "frame has an empty name") }
        switch try reader.read(UInt8.self, "object flag") {
        case 0: return (kind, poster, sequence, name, nil)
        case 1: return (kind, poster, sequence, name, try reader.readString("object", limit: Self.maximumNameLength))
        case let flag: throw WormholeError(.corruptData, "frame has object flag \(flag)")
        }
    }

    /// The length of the userInfo that follows a frame's head (``ByteReader/readLength(_:)``: the caller bounds it).
    package static func userInfoLength(_ reader: inout ByteReader<some ReadableBytes>) throws(WormholeError) -> Int {
        try reader.readLength("userInfo length")
    }

    private init(kind: Kind, poster: UInt64, sequence: UInt64, contents: Contents) {
        self.kind = kind
        self.poster = poster
        self.sequence = sequence
        self.contents = contents
    }

    package init(poster: UInt64, sequence: UInt64, name: String, object: String?, userInfo: [UInt8]?) {
        self.init(
            kind: .notification, poster: poster, sequence: sequence,
            contents: Contents(name: name, object: object, userInfo: userInfo.map(ArchiveBytes.init)))
    }
}

extension Frame {
    /// The fixed bytes every frame, and a shared frame's message, begins with ("WH", version, kind, poster,
    /// sequence), read without the rest: what a shared frame's message and a spool segment's first record are
    /// recognised by. ``Frame/init(head:)`` checks them with an error for each.
    package struct Header {
        package var version: UInt8
        package var kind: UInt8
        package var poster: UInt64
        package var sequence: UInt64

        /// nil when `bytes` is shorter than a header or does not begin with "WH".
        package init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= Frame.headerSize, bytes[0] == UInt8(ascii: "W"), bytes[1] == UInt8(ascii: "H") else { return nil }
            version = bytes[2]
            kind = bytes[3]
            poster = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt64.self))
            sequence = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        }
    }
}
