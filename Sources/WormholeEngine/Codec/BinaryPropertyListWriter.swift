import Foundation

/// Writes binary property lists (`bplist00`): objects are added one by one, containers refer to objects added
/// before by index, and ``bytes(top:)`` lays them out with the narrowest offsets and references that fit.
struct BinaryPropertyListWriter {
    enum Object {
        case bool(Bool)
        case integer(Int64)
        case unsignedInteger(UInt64)
        case real(Double)
        case string(String)
        case data(Data)
        case uid(Int)
        case array([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    private(set) var objects: [Object] = []

    init(capacity: Int = 32) {
        objects.reserveCapacity(capacity)
    }

    /// Adds `object`; returns its index.
    mutating func add(_ object: Object) -> Int {
        objects.append(object)
        return objects.count - 1
    }

    /// The whole property list, with `top` as its top object: sizes first, then one write into an exact buffer.
    func bytes(top: Int) -> [UInt8] {
        let referenceSize = Self.width(UInt64(objects.count))
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        var size = 8
        for object in objects {
            offsets.append(size)
            size += Self.encodedSize(object, referenceSize: referenceSize)
        }
        let tableOffset = size
        let offsetSize = Self.width(UInt64(tableOffset))
        let total = tableOffset + objects.count * offsetSize + 32
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            var cursor = Cursor(buffer: buffer)
            for byte in "bplist00".utf8 { cursor.put(byte) }
            for object in objects { cursor.put(object, referenceSize: referenceSize) }
            for offset in offsets { cursor.put(UInt64(offset), width: offsetSize) }
            for byte in [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)] as [UInt8] { cursor.put(byte) }
            cursor.put(UInt64(objects.count), width: 8)
            cursor.put(UInt64(top), width: 8)
            cursor.put(UInt64(tableOffset), width: 8)
            count = cursor.position
        }
    }

    private static func encodedSize(_ object: Object, referenceSize: Int) -> Int {
        switch object {
        case .bool: return 1
        case .integer(let value): return 1 + integerWidth(value)
        case .unsignedInteger: return 17
        case .real: return 9
        case .string(let string):
            if isASCII(string) { return headerSize(string.utf8.count) + string.utf8.count }
            let units = string.utf16.count
            return headerSize(units) + 2 * units
        case .data(let data): return headerSize(data.count) + data.count
        case .uid(let value): return 1 + width(UInt64(value))
        case .array(let items): return headerSize(items.count) + items.count * referenceSize
        case .dictionary(let keys, _): return headerSize(keys.count) + 2 * keys.count * referenceSize
        }
    }

    /// Eight bytes for negative integers (two's complement), else the fewest of 1, 2 or 4 that hold it.
    private static func integerWidth(_ value: Int64) -> Int {
        value < 0 ? 8 : width(UInt64(value))
    }

    private static func headerSize(_ count: Int) -> Int {
        count < 15 ? 1 : 2 + width(UInt64(count))
    }

    private static func isASCII(_ string: String) -> Bool {
        let utf8 = string.utf8
        return utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } } ?? utf8.allSatisfy { $0 < 0x80 }
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value`.
    private static func width(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    /// Writes into a buffer sized exactly by ``encodedSize(_:referenceSize:)``.
    private struct Cursor {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var position = 0

        // Every write checks its bounds, so a size computed wrong truncates the output instead of writing
        // past the buffer; the tests compare whole archives with Foundation's reading of them.
        mutating func put(_ byte: UInt8) {
            guard position < buffer.count else { return }
            buffer[position] = byte
            position += 1
        }

        mutating func put(_ value: UInt64, width: Int) {
            var shift = UInt64(width - 1) &* 8
            while true {
                put(UInt8(truncatingIfNeeded: value &>> shift))
                if shift == 0 { return }
                shift &-= 8
            }
        }

        mutating func put(bytes: UnsafeRawBufferPointer) {
            guard let source = bytes.baseAddress, let target = buffer.baseAddress, bytes.count > 0,
                bytes.count <= buffer.count - position
            else { return }
            (target + position).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            position += bytes.count
        }

        mutating func header(_ marker: UInt8, count: Int) {
            if count < 15 {
                put(marker | UInt8(count))
                return
            }
            put(marker | 0x0F)
            let width = BinaryPropertyListWriter.width(UInt64(count))
            put(0x10 | UInt8(width.trailingZeroBitCount))
            put(UInt64(count), width: width)
        }

        mutating func put(_ object: Object, referenceSize: Int) {
            switch object {
            case .bool(let flag):
                put(flag ? 0x09 : 0x08)
            case .integer(let value):
                let width = BinaryPropertyListWriter.integerWidth(value)
                put(0x10 | UInt8(width.trailingZeroBitCount))
                put(UInt64(bitPattern: value), width: width)
            case .unsignedInteger(let value):
                // Above Int64.max: sixteen bytes, as Apple's writer does.
                put(0x14)
                put(0, width: 8)
                put(value, width: 8)
            case .real(let value):
                put(0x23)
                put(value.bitPattern, width: 8)
            case .string(let string):
                if BinaryPropertyListWriter.isASCII(string) {
                    var string = string
                    string.withUTF8 { utf8 in
                        header(0x50, count: utf8.count)
                        put(bytes: UnsafeRawBufferPointer(utf8))
                    }
                } else {
                    header(0x60, count: string.utf16.count)
                    for unit in string.utf16 { put(UInt64(unit), width: 2) }
                }
            case .data(let data):
                header(0x40, count: data.count)
                data.withUnsafeBytes { put(bytes: $0) }
            case .uid(let value):
                let width = BinaryPropertyListWriter.width(UInt64(value))
                put(0x80 | UInt8(width - 1))
                put(UInt64(value), width: width)
            case .array(let items):
                header(0xA0, count: items.count)
                for item in items { put(UInt64(item), width: referenceSize) }
            case .dictionary(let keys, let values):
                header(0xD0, count: keys.count)
                for key in keys { put(UInt64(key), width: referenceSize) }
                for value in values { put(UInt64(value), width: referenceSize) }
            }
        }
    }
}
