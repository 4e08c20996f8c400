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

    /// The whole property list, with `top` as its top object.
    func bytes(top: Int) -> [UInt8] {
        let referenceSize = Self.width(UInt64(objects.count))
        var output: [UInt8] = Array("bplist00".utf8)
        output.reserveCapacity(64 + objects.count * 12)
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        for object in objects {
            offsets.append(output.count)
            Self.append(object, referenceSize: referenceSize, to: &output)
        }
        let tableOffset = output.count
        let offsetSize = Self.width(UInt64(tableOffset))
        for offset in offsets { Self.appendUnsigned(UInt64(offset), width: offsetSize, to: &output) }
        output.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        Self.appendUnsigned(UInt64(objects.count), width: 8, to: &output)
        Self.appendUnsigned(UInt64(top), width: 8, to: &output)
        Self.appendUnsigned(UInt64(tableOffset), width: 8, to: &output)
        return output
    }

    private static func append(_ object: Object, referenceSize: Int, to output: inout [UInt8]) {
        switch object {
        case .bool(let flag):
            output.append(flag ? 0x09 : 0x08)
        case .integer(let value):
            if value >= 0 && value <= 0xFF {
                output.append(0x10)
                output.append(UInt8(value))
            } else if value >= 0 && value <= 0xFFFF {
                output.append(0x11)
                appendUnsigned(UInt64(value), width: 2, to: &output)
            } else if value >= 0 && value <= 0xFFFF_FFFF {
                output.append(0x12)
                appendUnsigned(UInt64(value), width: 4, to: &output)
            } else {
                // Negative integers are always eight bytes, in two's complement.
                output.append(0x13)
                appendUnsigned(UInt64(bitPattern: value), width: 8, to: &output)
            }
        case .unsignedInteger(let value):
            // Above Int64.max: sixteen bytes, as Apple's writer does.
            output.append(0x14)
            appendUnsigned(0, width: 8, to: &output)
            appendUnsigned(value, width: 8, to: &output)
        case .real(let value):
            output.append(0x23)
            appendUnsigned(value.bitPattern, width: 8, to: &output)
        case .string(let string):
            let utf8 = string.utf8
            let isASCII = utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } }
                ?? utf8.allSatisfy { $0 < 0x80 }
            if isASCII {
                appendHeader(0x50, count: utf8.count, to: &output)
                output.append(contentsOf: utf8)
            } else {
                let units = Array(string.utf16)
                appendHeader(0x60, count: units.count, to: &output)
                for unit in units {
                    output.append(UInt8(unit >> 8))
                    output.append(UInt8(unit & 0xFF))
                }
            }
        case .data(let bytes):
            appendHeader(0x40, count: bytes.count, to: &output)
            output.append(contentsOf: bytes)
        case .uid(let value):
            let width = Self.width(UInt64(value))
            output.append(0x80 | UInt8(width - 1))
            appendUnsigned(UInt64(value), width: width, to: &output)
        case .array(let items):
            appendHeader(0xA0, count: items.count, to: &output)
            for item in items { appendUnsigned(UInt64(item), width: referenceSize, to: &output) }
        case .dictionary(let keys, let values):
            appendHeader(0xD0, count: keys.count, to: &output)
            for key in keys { appendUnsigned(UInt64(key), width: referenceSize, to: &output) }
            for value in values { appendUnsigned(UInt64(value), width: referenceSize, to: &output) }
        }
    }

    /// A marker with the count in its low nibble, or followed by an integer object when it does not fit.
    private static func appendHeader(_ marker: UInt8, count: Int, to output: inout [UInt8]) {
        if count < 15 {
            output.append(marker | UInt8(count))
            return
        }
        output.append(marker | 0x0F)
        let width = Self.width(UInt64(count))
        let exponent: UInt8 = width == 1 ? 0 : width == 2 ? 1 : width <= 4 ? 2 : 3
        output.append(0x10 | exponent)
        appendUnsigned(UInt64(count), width: 1 << Int(exponent), to: &output)
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value`.
    private static func width(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    private static func appendUnsigned(_ value: UInt64, width: Int, to output: inout [UInt8]) {
        var shift = UInt64(width - 1) &* 8
        while true {
            output.append(UInt8(truncatingIfNeeded: value &>> shift))
            if shift == 0 { return }
            shift &-= 8
        }
    }
}
