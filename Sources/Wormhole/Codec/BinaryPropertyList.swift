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
        var trailer = ByteReader(bytes, from: bytes.count - 32)
        _ = try trailer.readBytes(6, "trailer")
        offsetSize = Int(try trailer.read(UInt8.self, "offset size"))
        referenceSize = Int(try trailer.read(UInt8.self, "reference size"))
        let count = try trailer.read(UInt64.self, "object count")
        let top = try trailer.read(UInt64.self, "top object")
        let table = try trailer.read(UInt64.self, "offset table")
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
        let start = offsets[index]
        var reader = ByteReader(bytes, from: start, to: offsetTable)
        let marker = try reader.read(UInt8.self, "object \(index) marker")
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
            switch low {
            case 0: return .integer(Int64(try reader.read(UInt8.self, "integer")))
            case 1: return .integer(Int64(try reader.read(UInt16.self, "integer")))
            case 2: return .integer(Int64(try reader.read(UInt32.self, "integer")))
            case 3: return .integer(Int64(bitPattern: try reader.read(UInt64.self, "integer")))
            case 4:
                let high = try reader.read(UInt64.self, "integer")
                let lowBits = try reader.read(UInt64.self, "integer")
                guard high == 0 else { throw WormholeError(.corruptData, "object \(index) is a 128-bit integer") }
                return .unsignedInteger(lowBits)
            default: throw WormholeError(.corruptData, "object \(index) has an integer of 2^\(low) bytes")
            }
        case 0x2:
            switch low {
            case 2: return .real(Double(Float(bitPattern: try reader.read(UInt32.self, "real"))))
            case 3: return .real(Double(bitPattern: try reader.read(UInt64.self, "real")))
            default: throw WormholeError(.corruptData, "object \(index) has a real of 2^\(low) bytes")
            }
        case 0x3:
            guard marker == 0x33 else { throw WormholeError(.corruptData, "object \(index) has unknown marker \(marker)") }
            return .date(Double(bitPattern: try reader.read(UInt64.self, "date")))
        case 0x4:
            let count = try length(low, &reader, index)
            return .data(try reader.readBytes(count, "data of object \(index)"))
        case 0x5:
            let count = try length(low, &reader, index)
            let raw = try reader.readBytes(count, "string of object \(index)")
            guard raw.allSatisfy({ $0 < 0x80 }) else {
                throw WormholeError(.corruptData, "ASCII string of object \(index) holds a byte over 127")
            }
            return .string(String(decoding: raw, as: UTF8.self))
        case 0x6:
            let count = try length(low, &reader, index)
            guard count <= reader.remaining / 2 else { throw WormholeError(.corruptData, "string of object \(index) is cut short") }
            var units: [UInt16] = []
            units.reserveCapacity(count)
            for _ in 0..<count { units.append(try reader.read(UInt16.self, "UTF-16 string")) }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            let size = low + 1
            guard size <= 8 else { throw WormholeError(.corruptData, "object \(index) has a UID of \(size) bytes") }
            return .uid(try unsigned(at: reader.offset, size: size, limit: offsetTable))
        case 0xA:
            return .array(try references(try length(low, &reader, index), at: reader.offset, index))
        case 0xC:
            return .set(try references(try length(low, &reader, index), at: reader.offset, index))
        case 0xD:
            let count = try length(low, &reader, index)
            guard count <= Int.max / 2 else { throw WormholeError(.corruptData, "dictionary of object \(index) is too large") }
            let keys = try references(count * 2, at: reader.offset, index)
            return .dictionary(
                keys: References(bytes: bytes, start: keys.start, count: count, size: referenceSize),
                values: References(bytes: bytes, start: keys.start + count * referenceSize, count: count, size: referenceSize))
        default:
            throw WormholeError(.corruptData, "object \(index) has unknown marker \(marker)")
        }
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
            guard let length = try? unsigned(at: offset + 2, size: width, limit: offsetTable), length == UInt64(count)
            else { return false }
            offset += 2 + width
        }
        guard offset + count <= offsetTable else { return false }
        return expected.withUTF8Buffer { expectedBytes in
            for position in 0..<count where bytes[offset + position] != expectedBytes[position] { return false }
            return true
        }
    }

    /// The count in a marker's low nibble, or in the integer object that follows when the nibble is 0xF.
    private func length(_ low: Int, _ reader: inout ByteReader, _ index: Int) throws(WormholeError) -> Int {
        guard low == 0x0F else { return low }
        let marker = try reader.read(UInt8.self, "length of object \(index)")
        guard marker >> 4 == 0x1, marker & 0x0F <= 3 else {
            throw WormholeError(.corruptData, "length of object \(index) is not an integer")
        }
        let size = 1 << Int(marker & 0x0F)
        let value = try unsigned(at: reader.offset, size: size, limit: offsetTable)
        _ = try reader.readBytes(size, "length of object \(index)")
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

    private func unsigned(at offset: Int, size: Int, limit: Int? = nil) throws(WormholeError) -> UInt64 {
        let end = limit ?? bytes.count
        guard offset >= 0, size <= 8, offset <= end - size else {
            throw WormholeError(.corruptData, "a \(size)-byte integer at \(offset) is past the end")
        }
        var value: UInt64 = 0
        for index in offset..<(offset + size) {
            value = value &<< 8 | UInt64(bytes[index])
        }
        return value
    }
}
