/// A bounds-checked reader of binary property lists (`bplist00`), for bytes that another process sent.
///
/// Objects are parsed one at a time, on demand, by index; containers hold the indexes of their elements, so
/// nothing here recurses and no input can make it read outside the buffer.
struct BinaryPropertyList {
    /// One parsed object. Containers refer to their elements by object index.
    enum Object {
        case null
        case bool(Bool)
        case integer(Int64)
        case unsignedInteger(UInt64)
        case real(Double)
        case date(Double)
        case data(ArraySlice<UInt8>)
        case string(String)
        case uid(UInt64)
        case array(References)
        case set(References)
        case dictionary(keys: References, values: References)
    }

    /// A container's element references, read in place; every one was checked to be in range when parsed.
    struct References: RandomAccessCollection {
        let bytes: [UInt8]
        let start: Int
        let count: Int
        let size: Int

        var startIndex: Int { 0 }
        var endIndex: Int { count }

        subscript(position: Int) -> Int {
            var value = 0
            var offset = start + position * size
            for _ in 0..<size {
                value = value &<< 8 | Int(bytes[offset])
                offset += 1
            }
            return value
        }
    }

    let bytes: [UInt8]
    let objectCount: Int
    let topObject: Int
    private let offsetSize: Int
    private let referenceSize: Int
    private let offsetTable: Int
    /// Where each object starts, read once from the offset table and checked to lie in the object area.
    private let offsets: [Int]

    init(_ bytes: [UInt8]) throws(WormholeError) {
        self.bytes = bytes
        let header: [UInt8] = Array("bplist00".utf8)
        guard bytes.count >= header.count + 32, bytes.starts(with: header) else {
            throw WormholeError(.corruptData, "not a binary property list")
        }
        // The trailer: 6 unused bytes, the offset and reference sizes, then three big-endian 64-bit integers.
        let trailer = bytes.count - 32
        func integer(at start: Int) -> UInt64 { bytes[start..<start + 8].reduce(0) { $0 &<< 8 | UInt64($1) } }
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        let count = integer(at: trailer + 8)
        let top = integer(at: trailer + 16)
        let table = integer(at: trailer + 24)
        let tableLimit = UInt64(bytes.count - 32)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            count > 0, count <= tableLimit, top < count, table >= 8, table <= tableLimit,
            (tableLimit - table) / UInt64(offsetSize) >= count
        else {
            throw WormholeError(.corruptData, "binary property list trailer is inconsistent")
        }
        objectCount = Int(count)
        topObject = Int(top)
        offsetTable = Int(table)
        var offsets: [Int] = []
        offsets.reserveCapacity(objectCount)
        var position = offsetTable
        for index in 0..<objectCount {
            var start = 0
            for _ in 0..<offsetSize {
                start = start &<< 8 | Int(bytes[position])
                position += 1
            }
            guard start >= 8, start < offsetTable else {
                throw WormholeError(.corruptData, "object \(index) starts outside the object area")
            }
            offsets.append(start)
        }
        self.offsets = offsets
    }

    /// Parses the object at `index`.
    func object(_ index: Int) throws(WormholeError) -> Object {
        guard index >= 0, index < objectCount else {
            throw WormholeError(.corruptData, "object reference \(index) is outside 0..<\(objectCount)")
        }
        var offset = offsets[index]
        let marker = bytes[offset]
        offset += 1
        let low = Int(marker & 0x0F)
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw WormholeError(.corruptData, "object \(index) has unknown marker \(marker)")
            }
        case 0x1:
            guard low <= 4 else { throw WormholeError(.corruptData, "object \(index) has an integer of 2^\(low) bytes") }
            let size = 1 << low
            guard offset + size <= offsetTable else { throw cutShort(index) }
            if size == 16 {
                guard unchecked(at: offset, size: 8) == 0 else {
                    throw WormholeError(.corruptData, "object \(index) is a 128-bit integer")
                }
                return .unsignedInteger(unchecked(at: offset + 8, size: 8))
            }
            let value = unchecked(at: offset, size: size)
            // Eight-byte integers are signed; narrower ones are not.
            return .integer(size == 8 ? Int64(bitPattern: value) : Int64(value))
        case 0x2:
            guard low == 2 || low == 3 else { throw WormholeError(.corruptData, "object \(index) has a real of 2^\(low) bytes") }
            guard offset + (1 << low) <= offsetTable else { throw cutShort(index) }
            let bits = unchecked(at: offset, size: 1 << low)
            return .real(low == 2 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))) : Double(bitPattern: bits))
        case 0x3:
            guard marker == 0x33 else { throw WormholeError(.corruptData, "object \(index) has unknown marker \(marker)") }
            guard offset + 8 <= offsetTable else { throw cutShort(index) }
            return .date(Double(bitPattern: unchecked(at: offset, size: 8)))
        case 0x4:
            let count = try length(low, &offset, index)
            guard count <= offsetTable - offset else { throw cutShort(index) }
            return .data(bytes[offset..<(offset + count)])
        case 0x5:
            let count = try length(low, &offset, index)
            guard count <= offsetTable - offset else { throw cutShort(index) }
            let raw = bytes[offset..<(offset + count)]
            guard raw.allSatisfy({ $0 < 0x80 }) else {
                throw WormholeError(.corruptData, "ASCII string of object \(index) holds a byte over 127")
            }
            return .string(String(decoding: raw, as: UTF8.self))
        case 0x6:
            let count = try length(low, &offset, index)
            guard count <= (offsetTable - offset) / 2 else { throw cutShort(index) }
            var units: [UInt16] = []
            units.reserveCapacity(count)
            for position in 0..<count { units.append(UInt16(unchecked(at: offset + 2 * position, size: 2))) }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            let size = low + 1
            guard size <= 8 else { throw WormholeError(.corruptData, "object \(index) has a UID of \(size) bytes") }
            guard offset + size <= offsetTable else { throw cutShort(index) }
            return .uid(unchecked(at: offset, size: size))
        case 0xA:
            let count = try length(low, &offset, index)
            return .array(try references(count, at: offset, index))
        case 0xC:
            let count = try length(low, &offset, index)
            return .set(try references(count, at: offset, index))
        case 0xD:
            let count = try length(low, &offset, index)
            guard count <= Int.max / 2 else { throw WormholeError(.corruptData, "dictionary of object \(index) is too large") }
            let keys = try references(count * 2, at: offset, index)
            return .dictionary(
                keys: References(bytes: bytes, start: keys.start, count: count, size: referenceSize),
                values: References(bytes: bytes, start: keys.start + count * referenceSize, count: count, size: referenceSize))
        default:
            throw WormholeError(.corruptData, "object \(index) has unknown marker \(marker)")
        }
    }

    private func cutShort(_ index: Int) -> WormholeError {
        WormholeError(.corruptData, "object \(index) is cut short by the offset table")
    }

    /// A big-endian integer of `size` bytes at `offset`, which the caller has checked to be in bounds.
    private func unchecked(at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for position in offset..<(offset + size) { value = value &<< 8 | UInt64(bytes[position]) }
        return value
    }

    /// The value of object `index` if it is a UID, read without the rest of ``object(_:)``.
    func uid(_ index: Int) -> UInt64? {
        guard index >= 0, index < objectCount else { return nil }
        let start = offsets[index]
        let marker = bytes[start]
        guard marker >> 4 == 0x8 else { return nil }
        let size = Int(marker & 0x0F) + 1
        guard size <= 8, start + 1 + size <= offsetTable else { return nil }
        var value: UInt64 = 0
        for position in (start + 1)...(start + size) { value = value &<< 8 | UInt64(bytes[position]) }
        return value
    }

    /// Whether object `index` is the ASCII string `expected`, read without making a String.
    func isString(_ index: Int, _ expected: StaticString) -> Bool {
        guard index >= 0, index < objectCount else { return false }
        var offset = offsets[index]
        let count = expected.utf8CodeUnitCount
        if count < 15 {
            guard bytes[offset] == 0x50 | UInt8(count) else { return false }
            offset += 1
        } else {
            // A longer string's count follows its marker as an integer object of 1, 2, 4 or 8 bytes.
            guard offset + 2 <= offsetTable, bytes[offset] == 0x5F, bytes[offset + 1] >> 4 == 0x1,
                bytes[offset + 1] & 0x0F <= 3
            else { return false }
            let width = 1 << Int(bytes[offset + 1] & 0x0F)
            guard offset + 2 + width <= offsetTable, unchecked(at: offset + 2, size: width) == UInt64(count) else {
                return false
            }
            offset += 2 + width
        }
        guard offset + count <= offsetTable else { return false }
        return expected.withUTF8Buffer { expectedBytes in
            for position in 0..<count where bytes[offset + position] != expectedBytes[position] { return false }
            return true
        }
    }

    /// The count in a marker's low nibble, or in the integer object that follows when the nibble is 0xF.
    private func length(_ low: Int, _ offset: inout Int, _ index: Int) throws(WormholeError) -> Int {
        guard low == 0x0F else { return low }
        guard offset < offsetTable else { throw cutShort(index) }
        let marker = bytes[offset]
        guard marker >> 4 == 0x1, marker & 0x0F <= 3 else {
            throw WormholeError(.corruptData, "length of object \(index) is not an integer")
        }
        let size = 1 << Int(marker & 0x0F)
        guard offset + 1 + size <= offsetTable else { throw cutShort(index) }
        let value = unchecked(at: offset + 1, size: size)
        offset += 1 + size
        guard value <= UInt64(bytes.count) else {
            throw WormholeError(.corruptData, "object \(index) claims \(value) elements")
        }
        return Int(value)
    }

    /// `count` references starting at byte `start`, each checked to name an existing object.
    private func references(_ count: Int, at start: Int, _ index: Int) throws(WormholeError) -> References {
        guard count <= (offsetTable - start) / referenceSize else {
            throw WormholeError(.corruptData, "references of object \(index) are cut short")
        }
        let references = References(bytes: bytes, start: start, count: count, size: referenceSize)
        for reference in references where reference >= objectCount || reference < 0 {
            throw WormholeError(.corruptData, "object \(index) refers to object \(reference) of \(objectCount)")
        }
        return references
    }
}
