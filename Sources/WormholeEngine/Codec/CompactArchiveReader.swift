import Foundation

/// Reads a ``CompactArchive`` that another process sent, checking every byte.
///
/// One pass, front to back: every read is checked against the end, every count against the bytes left (each
/// value takes at least one byte, so no count can make it allocate more than the archive's size), every string
/// is validated UTF-8, nesting stops at ``Limits/archiveMaximumDepth``, and the number keys of a
/// dictionary and the members of a set may not share a hash beyond ``Limits/maximumHashSharing``. Values are
/// those ``KeyedArchiveDecoder`` gives for the same userInfo, each checked against the allowed classes.
///
/// A `Data` value of at least ``sharedDataMinimum`` bytes in an archive read from a mapped memory file
/// (``ArchiveBytes``) is not copied: it shares the mapping's pages, which it keeps mapped while it lives. Only
/// the first decoding of a mapping does this (``FileMapping/lend()``); values of later ones copy their bytes.
struct CompactArchiveReader: ~Copyable {
    /// The smallest `Data` value that shares a mapping rather than copying out of it (in the fuzz target's build,
    /// every one: its inputs are smaller than this).
    #if WORMHOLE_FUZZING
    static let sharedDataMinimum = 1
    #else
    static let sharedDataMinimum = 16 << 10
    #endif

    private let base: UnsafeRawBufferPointer
    private let lent: FileMapping.Lent?
    private var offset: Int
    private let allowed: AllowedClasses

    private init(_ base: UnsafeRawBufferPointer, lent: FileMapping.Lent?, allowed: AllowedClasses) {
        self.base = base
        self.lent = lent
        self.allowed = allowed
        offset = CompactArchive.magic.count
    }

    /// The root value of `raw`, a compact archive whose values all belong to `allowed`; its large `Data` values
    /// use the `lent` mapping's pages where `raw` lies in its mapping.
    /// - Throws: ``WormholeError/Code/disallowedClass`` for a value outside `allowed`, and
    ///   ``WormholeError/Code/corruptData`` saying what is wrong and at which byte.
    static func decodeRoot(_ raw: UnsafeRawBufferPointer, lent: FileMapping.Lent? = nil, allowed: AllowedClasses)
        throws(WormholeError) -> Any
    {
        guard CompactArchive.isCompact(raw) else { throw WormholeError(.corruptData, "not a compact archive") }
        var reader = CompactArchiveReader(raw, lent: lent, allowed: allowed)
        let root = try reader.value(depth: 0)
        guard reader.offset == raw.count else {
            throw WormholeError(.corruptData, "compact archive has \(raw.count - reader.offset) bytes after its root value")
        }
        return root
    }

    /// The userInfo `raw` holds, a compact archive whose root value must be a dictionary; read as
    /// ``decodeRoot(_:lent:allowed:)`` reads it, without boxing a dictionary root as `Any` and casting it back.
    /// - Throws: as ``decodeRoot(_:lent:allowed:)``, and ``WormholeError/Code/corruptData`` when the root value is
    ///   not a dictionary.
    static func decodeUserInfo(_ raw: UnsafeRawBufferPointer, lent: FileMapping.Lent? = nil, allowed: AllowedClasses)
        throws(WormholeError) -> [AnyHashable: Any]
    {
        let start = CompactArchive.magic.count
        let dictionaryRoot = raw.count > start && raw[start] == CompactArchive.Tag.dictionary.rawValue
        guard CompactArchive.isCompact(raw), dictionaryRoot else {
            // Any other root is read whole first, so that what is wrong with it is said as for any value.
            guard let dictionary = try decodeRoot(raw, lent: lent, allowed: allowed) as? [AnyHashable: Any] else {
                throw WormholeError(.corruptData, "compact archive's root value is not a dictionary")
            }
            return dictionary
        }
        var reader = CompactArchiveReader(raw, lent: lent, allowed: allowed)
        reader.offset += 1
        try reader.require("NSDictionary", as: .dictionary, at: start)
        let root = try reader.dictionary(depth: 0)
        guard reader.offset == raw.count else {
            throw WormholeError(
                .corruptData, "compact archive has \(raw.count - reader.offset) bytes after its root value")
        }
        return root
    }

    private mutating func value(depth: Int) throws(WormholeError) -> Any {
        guard depth <= Limits.archiveMaximumDepth else {
            throw corrupt("nests deeper than \(Limits.archiveMaximumDepth) levels")
        }
        let start = offset
        guard let tag = CompactArchive.Tag(rawValue: try byte()) else { throw corrupt("has an unknown tag", at: start) }
        switch tag {
        case .string:
            try require("NSString", as: .string, at: start)
            return try string()
        case .integer:
            try require("NSNumber", as: .number, at: start)
            let raw = try varint()
            let integer = Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
            guard integer >= 0, integer < Self.smallIntegerCount else { return NSNumber(value: integer) }
            return Self.smallIntegers[Int(integer)]
        case .dictionary:
            try require("NSDictionary", as: .dictionary, at: start)
            return try dictionary(depth: depth)
        case .real:
            try require("NSNumber", as: .number, at: start)
            return NSNumber(value: try real())
        case .false, .true:
            try require("NSNumber", as: .number, at: start)
            return tag == .true ? Self.truth.true : Self.truth.false
        case .unsignedInteger:
            try require("NSNumber", as: .number, at: start)
            let number = try varint()
            guard number > UInt64(Int64.max) else { throw corrupt("has an unsigned integer that fits a signed one", at: start) }
            return NSNumber(value: number)
        case .data:
            try require("NSData", as: .data, at: start)
            let count = try count(perElement: 1)
            defer { offset += count }
            let bytes = UnsafeRawBufferPointer(rebasing: base[offset..<(offset + count)])
            guard let lent, count >= Self.sharedDataMinimum, let start = bytes.baseAddress else { return Data(bytes) }
            // The lent mapping's pages are private and writable: a Data that holds the only reference writes
            // them in place.
            return Data(
                bytesNoCopy: lent.address(of: start), count: count,
                deallocator: .custom { _, _ in withExtendedLifetime(lent.mapping) {} })
        case .date:
            try require("NSDate", as: .date, at: start)
            return Date(timeIntervalSinceReferenceDate: try real())
        case .array:
            try require("NSArray", as: .array, at: start)
            let count = try count(perElement: 1)
            var array: [Any] = []
            array.reserveCapacity(count)
            for _ in 0..<count { array.append(try value(depth: depth + 1)) }
            return array
        case .null:
            try require("NSNull", as: .null, at: start)
            return KeyedArchiveDecoder.null
        case .set:
            try require("NSSet", as: .set, at: start)
            let count = try count(perElement: 1)
            var set = Set<AnyHashable>(minimumCapacity: count)
            var hashes = HashBound()
            for _ in 0..<count {
                let memberStart = offset
                let member = try KeyedArchiveDecoder.hashable(try value(depth: depth + 1), in: memberStart)
                try hashes.admit(member.hashValue, in: memberStart)
                set.insert(member)
            }
            return set
        case .url:
            try require("NSURL", as: .url, at: start)
            guard offset < base.count, base[offset] == CompactArchive.Tag.string.rawValue else {
                throw corrupt("has a URL whose relative part is not a string", at: start)
            }
            offset += 1
            let relative = try string()
            var baseURL: URL?
            if offset < base.count, base[offset] == CompactArchive.Tag.null.rawValue {
                offset += 1
            } else {
                guard offset < base.count, base[offset] == CompactArchive.Tag.url.rawValue, let url = try value(depth: depth + 1) as? URL
                else {
                    throw corrupt("has a URL whose base is not a URL", at: start)
                }
                baseURL = url
            }
            guard let url = URL(string: relative, relativeTo: baseURL) else { throw corrupt("has an invalid URL", at: start) }
            return url
        case .uuid:
            try require("NSUUID", as: .uuid, at: start)
            guard base.count - offset >= 16 else { throw cutShort() }
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: base[offset..<(offset + 16)])) }
            offset += 16
            return UUID(uuid: uuid)
        }
    }

    /// A dictionary whose tag has been read and allowed.
    private mutating func dictionary(depth: Int) throws(WormholeError) -> [AnyHashable: Any] {
        let count = try count(perElement: 2)
        guard count <= Limits.roomyDictionaryMaximumKeys else {
            var dictionary = [AnyHashable: Any](minimumCapacity: count)
            try insert(count, into: &dictionary, depth: depth)
            return dictionary
        }
        // A small one is roomy, so that few keys land on a taken bucket (Limits), and its leading entries whose
        // keys are distinct strings of ASCII are placed without comparing any key: those differ as their bytes
        // do. The first other key (a number, a string with other characters, one seen already) and every entry
        // after it are inserted as any, compared where they land on a taken bucket. Made this way, the dictionary
        // also does without a run-time lookup of its generic type that `init(minimumCapacity:)` makes.
        var placed = 0
        var failure: WormholeError?
        var dictionary = [AnyHashable: Any](
            _unsafeUninitializedCapacity: count * Limits.roomyDictionaryFactor, allowingDuplicates: false
        ) { keys, values in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: count) { keyBytes in
                do throws(WormholeError) {
                    while placed < count, let key = try distinctASCIIKey(after: keyBytes[..<placed]) {
                        let value = try value(depth: depth + 1)
                        keys.initializeElement(at: placed, to: AnyHashable(key.string))
                        values.initializeElement(at: placed, to: value)
                        keyBytes.initializeElement(at: placed, to: key.bytes)
                        placed += 1
                    }
                } catch {
                    failure = error
                }
            }
            return placed
        }
        if let failure { throw failure }
        try insert(count - placed, into: &dictionary, depth: depth)
        return dictionary
    }

    /// Reads the next entry's key when it is a string of ASCII only whose bytes differ from those of each of
    /// `earlier`; leaves any other key unread and returns nil.
    /// - Throws: as a string's key is refused: where strings are not allowed, or its length exceeds the bytes left.
    private mutating func distinctASCIIKey(after earlier: UnsafeMutableBufferPointer<Range<Int>>.SubSequence)
        throws(WormholeError) -> (string: String, bytes: Range<Int>)?
    {
        let keyStart = offset
        guard offset < base.count, base[offset] == CompactArchive.Tag.string.rawValue else { return nil }
        offset += 1
        try require("NSString", as: .string, at: keyStart)
        let length = try count(perElement: 1)
        let range = offset..<(offset + length)
        let bytes = UnsafeRawBufferPointer(rebasing: base[range])
        guard UTF8Text.isASCII(bytes),
            !earlier.contains(where: { $0.count == length && UnsafeRawBufferPointer(rebasing: base[$0]).elementsEqual(bytes) })
        else {
            offset = keyStart
            return nil
        }
        offset = range.upperBound
        return (UTF8Text.ascii(bytes), range)
    }

    /// Reads `count` entries into `dictionary`, a later one of the same key taking the place of an earlier one.
    private mutating func insert(_ count: Int, into dictionary: inout [AnyHashable: Any], depth: Int) throws(WormholeError) {
        var numberKeys: HashBound?
        for _ in 0..<count {
            let keyStart = offset
            let key: AnyHashable
            if offset < base.count, base[offset] == CompactArchive.Tag.string.rawValue {
                offset += 1
                try require("NSString", as: .string, at: keyStart)
                key = AnyHashable(try string())
            } else if let number = try value(depth: depth + 1) as? NSNumber {
                // A number's hash is the sender's choice; a string's is seeded per process.
                key = AnyHashable(number)
                if numberKeys == nil { numberKeys = HashBound() }
                try numberKeys?.admit(key.hashValue, in: keyStart)
            } else {
                throw corrupt("has a dictionary key that is not a string or number", at: keyStart)
            }
            dictionary[key] = try value(depth: depth + 1)
        }
    }

    /// The numbers the integers 0 to 255 and the two truth values decode to, each made once and shared, as they
    /// are written: an `NSNumber` made and freed costs about 840 instructions on Linux, a shared one a retain.
    /// Numbers are immutable, so sharing them across threads is safe.
    private static let smallIntegers = (0..<smallIntegerCount).map { NSNumber(value: Int64($0)) }
    private static let smallIntegerCount = 256
    private static let truth = (false: NSNumber(value: false), true: NSNumber(value: true))

    @inline(__always)
    private mutating func byte() throws(WormholeError) -> UInt8 {
        guard offset < base.count else { throw cutShort() }
        defer { offset += 1 }
        return base[offset]
    }

    /// An LEB128 of at most 64 bits.
    @inline(__always)
    private mutating func varint() throws(WormholeError) -> UInt64 {
        // Most lengths, counts and small integers take one byte.
        if offset < base.count, base[offset] < 0x80 {
            offset += 1
            return UInt64(base[offset - 1])
        }
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try byte()
            guard shift < 63 || byte <= 1 else { throw corrupt("has a number longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    /// A count of elements each at least `perElement` bytes long, which the bytes left must hold.
    @inline(__always)
    private mutating func count(perElement: Int) throws(WormholeError) -> Int {
        let count = try varint()
        guard count <= UInt64(base.count - offset) / UInt64(perElement) else {
            throw corrupt("claims \(count) elements, more than its \(base.count - offset) bytes left can hold")
        }
        return Int(count)
    }

    @inline(__always)
    private mutating func string() throws(WormholeError) -> String {
        let count = try count(perElement: 1)
        guard let string = UTF8Text.string(UnsafeRawBufferPointer(rebasing: base[offset..<(offset + count)])) else {
            throw corrupt("has a string that is not UTF-8")
        }
        offset += count
        return string
    }

    @inline(__always)
    private mutating func real() throws(WormholeError) -> Double {
        guard base.count - offset >= 8 else { throw cutShort() }
        defer { offset += 8 }
        return Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
    }

    @inline(__always)
    private func require(_ name: String, as canonical: AllowedClasses.Canonical, at position: Int) throws(WormholeError) {
        guard allowed.permits(name, as: canonical) else {
            throw WormholeError(.disallowedClass, "compact archive value at byte \(position) is of class \(name), which is not allowed")
        }
    }

    private func cutShort() -> WormholeError {
        WormholeError(.corruptData, "compact archive is cut short at byte \(offset) of \(base.count)")
    }

    private func corrupt(_ what: String, at position: Int? = nil) -> WormholeError {
        WormholeError(.corruptData, "compact archive value at byte \(position ?? offset) \(what)")
    }
}
