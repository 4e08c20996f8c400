import Foundation

/// Writes the ``CompactArchive`` of a value made of property-list values, `NSNull`, sets, URLs and UUIDs.
///
/// Returns nil for anything else (an object of the user's own, a Foundation class Wormhole does not carry, a
/// key that is neither a string nor a number, nesting past what receivers decode): such a value goes through
/// ``KeyedArchiveEncoder``, which archives it or says precisely what is wrong.
struct CompactArchiveWriter: ~Copyable {
    /// What is written so far, but for the bytes still `pending`.
    private var bytes: [UInt8] = []
    /// Room on the stack where small values are gathered and then appended to `bytes` together: every append
    /// to an array checks that the array is unique and has room, which costs more than writing a small value.
    private let pending: UnsafeMutableBufferPointer<UInt8>
    private var pendingCount = 0
    private var depthLeft = Limits.archiveMaximumDepth

    /// How many bytes `pending` holds.
    static let pendingSize = 1024

    private init(pending: UnsafeMutableBufferPointer<UInt8>) {
        self.pending = pending
        append(CompactArchive.magic)
    }

    /// The compact archive of `root`, or nil when it holds a value this format does not carry, or comes to more
    /// than `maximumSize` bytes.
    static func encode(_ root: Any, maximumSize: Int) -> [UInt8]? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: pendingSize) { pending in
            var writer = CompactArchiveWriter(pending: pending)
            guard writer.write(root) else { return nil }
            writer.flush()
            guard writer.bytes.count <= maximumSize else { return nil }
            return writer.bytes
        }
    }

    /// Appends what is pending to `bytes`; a first append makes `bytes` exactly that long.
    private mutating func flush() {
        guard pendingCount > 0 else { return }
        let gathered = UnsafeBufferPointer(rebasing: pending[..<pendingCount])
        if bytes.isEmpty { bytes = Array(gathered) } else { bytes.append(contentsOf: gathered) }
        pendingCount = 0
    }

    @inline(__always)
    private mutating func append(_ byte: UInt8) {
        if pendingCount == pending.count { flush() }
        pending[pendingCount] = byte
        pendingCount += 1
    }

    /// Appends `source`: gathered while it fits the room pending, else straight to `bytes` (through a typed
    /// buffer: Array's memcpy path).
    @inline(__always)
    private mutating func append(_ source: UnsafeRawBufferPointer) {
        if source.count > pending.count - pendingCount {
            flush()
            guard source.count <= pending.count else {
                bytes.append(contentsOf: source.assumingMemoryBound(to: UInt8.self))
                return
            }
        }
        guard let start = source.baseAddress, let to = pending.baseAddress else { return }
        UnsafeMutableRawPointer(to + pendingCount).copyMemory(from: start, byteCount: source.count)
        pendingCount += source.count
    }

    private mutating func append(_ source: [UInt8]) {
        source.withUnsafeBytes { append($0) }
    }

    /// Writes `value`; false when this format does not carry it.
    private mutating func write(_ value: Any) -> Bool {
        // The common concrete types first, by type identity, taken without a dynamic cast: a cast costs more even
        // when it matches, and a cast of a Swift value to a class it is not bridges the value first.
        let type = ObjectIdentifier(Swift.type(of: value))
        if type == ValueType.string, let string = ValueType.exactly(value, String.self) {
            write(string)
            return true
        }
        if type == ValueType.int, let integer = ValueType.exactly(value, Int.self) {
            write(integer: Int64(integer))
            return true
        }
        if type == ValueType.double, let real = ValueType.exactly(value, Double.self) {
            write(real: real, as: .real)
            return true
        }
        if type == ValueType.bool, let flag = ValueType.exactly(value, Bool.self) {
            append(flag ? CompactArchive.Tag.true.rawValue : CompactArchive.Tag.false.rawValue)
            return true
        }
        if type == ValueType.number, let number = ValueType.exactly(value, NSNumber.self) {
            write(number)
            return true
        }
        if type == ValueType.data, let data = ValueType.exactly(value, Data.self) {
            write(data)
            return true
        }
        if type == ValueType.stringDictionary, let dictionary = ValueType.exactly(value, [String: Any].self) {
            guard descend() else { return false }
            defer { depthLeft += 1 }
            write(tag: .dictionary, length: dictionary.count)
            for (key, item) in dictionary {
                write(key)
                guard write(item) else { return false }
            }
            return true
        }
        if type == ValueType.dictionary, let dictionary = ValueType.exactly(value, [AnyHashable: Any].self) {
            return write(dictionary)
        }
        if type == ValueType.array, let array = ValueType.exactly(value, [Any].self) {
            return write(array)
        }
        if type == ValueType.stringArray, let strings = ValueType.exactly(value, [String].self) {
            guard descend() else { return false }
            defer { depthLeft += 1 }
            write(tag: .array, length: strings.count)
            for string in strings { write(string) }
            return true
        }
        if type == ValueType.date, let date = ValueType.exactly(value, Date.self) {
            write(real: date.timeIntervalSinceReferenceDate, as: .date)
            return true
        }
        if type == ValueType.url, let url = ValueType.exactly(value, URL.self) {
            return write(url)
        }
        if type == ValueType.uuid, let uuid = ValueType.exactly(value, UUID.self) {
            write(uuid)
            return true
        }
        if type == ValueType.set, let set = ValueType.exactly(value, Set<AnyHashable>.self) {
            return write(set: set.lazy.map { $0.base }, count: set.count)
        }
        // Any other Swift array, dictionary or set, without converting it (SwiftCollection).
        if let collection = value as? any SwiftCollection {
            return write(collection)
        }
        switch value {
        case let string as String:
            write(string)
        case let flag as Bool where Swift.type(of: value) == Bool.self:
            append(flag ? CompactArchive.Tag.true.rawValue : CompactArchive.Tag.false.rawValue)
        // Before NSNumber: a cast of Data to a class bridges it, copying every byte.
        case let data as Data:
            write(data)
        case let number as NSNumber:
            write(number)
        case let date as Date:
            write(real: date.timeIntervalSinceReferenceDate, as: .date)
        case let array as [Any]:
            return write(array)
        case let dictionary as [AnyHashable: Any]:
            return write(dictionary)
        case is NSNull:
            append(CompactArchive.Tag.null.rawValue)
        case let url as URL:
            return write(url)
        case let uuid as UUID:
            write(uuid)
        case let set as Set<AnyHashable>:
            return write(set: set.lazy.map { $0.base }, count: set.count)
        case let set as NSSet:
            return write(set: set.lazy.map { $0 }, count: set.count)
        default:
            // Other integer and real types bridge to NSNumber above; what is left needs the keyed archive.
            return false
        }
        return true
    }

    /// Writes a Swift array, dictionary or set as the casts to `[Any]`, `[AnyHashable: Any]` and
    /// `Set<AnyHashable>` would have it written.
    private mutating func write(_ collection: any SwiftCollection) -> Bool {
        switch Swift.type(of: collection).shape {
        case .array:
            guard descend() else { return false }
            defer { depthLeft += 1 }
            write(tag: .array, length: collection.count)
            return collection.forEachElement { _, item in write(item) }
        case .dictionary:
            guard descend() else { return false }
            defer { depthLeft += 1 }
            write(tag: .dictionary, length: collection.count)
            return collection.forEachElement { key, item in
                guard let key, write(key: key.base) else { return false }
                return write(item)
            }
        case .set:
            let members = collection.collected.values
            return write(set: members, count: members.count)
        }
    }

    private mutating func write(_ data: Data) {
        write(tag: .data, length: data.count)
        guard data.count > pending.count - pendingCount else {
            data.withUnsafeBytes { append($0) }
            return
        }
        flush()
        // A large one with room to spare for what may follow it, so that the array is not grown by doubling
        // (a second copy of everything) after it; room never written to is never made resident.
        // Grown geometrically still, so that many large values are not each copied again.
        let needed = bytes.count + data.count
        if data.count >= 1 << 20 && needed > bytes.capacity {
            bytes.reserveCapacity(max(needed + (1 << 20), 2 * bytes.capacity))
        }
        // Through a typed buffer: Array's memcpy path.
        data.withUnsafeBytes { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    private mutating func write(_ array: [Any]) -> Bool {
        guard descend() else { return false }
        defer { depthLeft += 1 }
        write(tag: .array, length: array.count)
        for item in array {
            guard write(item) else { return false }
        }
        return true
    }

    private mutating func write(_ dictionary: [AnyHashable: Any]) -> Bool {
        guard descend() else { return false }
        defer { depthLeft += 1 }
        write(tag: .dictionary, length: dictionary.count)
        for (key, item) in dictionary {
            guard write(key: key.base), write(item) else { return false }
        }
        return true
    }

    /// Writes a dictionary's key, the `base` of its `AnyHashable`: a string or a number.
    private mutating func write(key: Any) -> Bool {
        if let string = ValueType.exactly(key, String.self) {
            write(string)
            return true
        }
        switch key {
        case let string as String: write(string)
        case let number as NSNumber: write(number)
        default: return false
        }
        return true
    }

    private mutating func write(set members: some Sequence<Any>, count: Int) -> Bool {
        guard descend() else { return false }
        defer { depthLeft += 1 }
        write(tag: .set, length: count)
        for member in members {
            // Objects of the user's own, and sets, are refused in a set by the keyed encoder, with the reason.
            if let object = member as? NSObject, !(object is NSNull), !FoundationClasses.contains(Swift.type(of: object)) {
                return false
            }
            if KeyedArchiveDecoder.holdsSet(member) { return false }
            guard write(member) else { return false }
        }
        return true
    }

    private mutating func write(_ uuid: UUID) {
        append(CompactArchive.Tag.uuid.rawValue)
        withUnsafeBytes(of: uuid.uuid) { append($0) }
    }

    private mutating func write(_ url: URL) -> Bool {
        guard descend() else { return false }
        defer { depthLeft += 1 }
        append(CompactArchive.Tag.url.rawValue)
        write(url.relativeString)
        guard let base = url.baseURL else {
            append(CompactArchive.Tag.null.rawValue)
            return true
        }
        return write(base)
    }

    private mutating func write(_ number: NSNumber) {
        // NSNumber's type letters: c is a Bool (or a char), d and f are reals, Q an unsigned 64-bit integer.
        switch number.objCType.pointee {
        case CChar(UInt8(ascii: "c")) where number.int64Value == 0 || number.int64Value == 1:
            append(number.boolValue ? CompactArchive.Tag.true.rawValue : CompactArchive.Tag.false.rawValue)
        case CChar(UInt8(ascii: "d")), CChar(UInt8(ascii: "f")):
            write(real: number.doubleValue, as: .real)
        case CChar(UInt8(ascii: "Q")) where number.uint64Value > UInt64(Int64.max):
            append(CompactArchive.Tag.unsignedInteger.rawValue)
            write(varint: number.uint64Value)
        default:
            write(integer: number.int64Value)
        }
    }

    @inline(__always)
    private mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            write(tag: .string, length: utf8.count)
            append(UnsafeRawBufferPointer(utf8))
        }
    }

    @inline(__always)
    private mutating func write(integer: Int64) {
        append(CompactArchive.Tag.integer.rawValue)
        write(varint: UInt64(bitPattern: integer << 1 ^ integer >> 63))
    }

    private mutating func write(real: Double, as tag: CompactArchive.Tag) {
        append(tag.rawValue)
        withUnsafeBytes(of: real.bitPattern.littleEndian) { append($0) }
    }

    @inline(__always)
    private mutating func write(tag: CompactArchive.Tag, length: Int) {
        append(tag.rawValue)
        write(varint: UInt64(length))
    }

    @inline(__always)
    private mutating func write(varint value: UInt64) {
        var value = value
        while value >= 0x80 {
            append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        append(UInt8(value))
    }

    @inline(__always)
    private mutating func descend() -> Bool {
        guard depthLeft > 0 else { return false }
        depthLeft -= 1
        return true
    }
}
