import Foundation

/// The tree of values a group value is stored as (format 2): what ``ValueTreeEncoder`` builds from a `Codable`
/// value and ``ValueTreeDecoder`` reads back, and what untyped readers (an observer's userInfo, `wormhole value`)
/// see. Property-list values (strings, numbers, booleans, dates, data, arrays, dictionaries with string keys)
/// and `NSNull` for nil: unlike `PropertyListEncoder`, which writes nil as the string `"$null"`, a string is
/// always a string and nil always `NSNull`.
///
/// Numbers are stored exactly: integers as 64-bit integers (an unsigned one past `Int64.max` as such), reals as
/// doubles, booleans as booleans. A reader takes a number as any numeric type that holds it exactly (a stored
/// `1.0` as the integer `1`, as `PropertyListDecoder` does), a real as a `Float` rounded; a boolean is never a
/// number, nor a number a boolean.
protocol ValueTreeLeaf {
    /// The value as stored in the tree.
    var treeValue: Any { get }
    /// The value a tree's leaf holds, or nil when it is not one of this type.
    static func fromTree(_ value: Any) -> Self?
}

/// The codec's numbers: whether one is a boolean, as the archive writer tells it (type letter `c`, 0 or 1).
extension NSNumber {
    package var isBoolean: Bool {
        objCType.pointee == CChar(UInt8(ascii: "c")) && (int64Value == 0 || int64Value == 1)
    }

    package var isReal: Bool {
        objCType.pointee == CChar(UInt8(ascii: "d")) || objCType.pointee == CChar(UInt8(ascii: "f"))
    }
}

extension String: ValueTreeLeaf {
    var treeValue: Any { self }
    static func fromTree(_ value: Any) -> String? { value as? String }
}

extension Bool: ValueTreeLeaf {
    var treeValue: Any { self }
    static func fromTree(_ value: Any) -> Bool? {
        guard let number = value as? NSNumber, number.isBoolean else { return nil }
        return number.boolValue
    }
}

extension Data: ValueTreeLeaf {
    var treeValue: Any { self }
    static func fromTree(_ value: Any) -> Data? { value as? Data }
}

extension Date: ValueTreeLeaf {
    var treeValue: Any { self }
    static func fromTree(_ value: Any) -> Date? { value as? Date }
}

extension Double: ValueTreeLeaf {
    var treeValue: Any { NSNumber(value: self) }
    static func fromTree(_ value: Any) -> Double? {
        guard let number = value as? NSNumber, !number.isBoolean else { return nil }
        if number.isReal { return number.doubleValue }
        if number.objCType.pointee == CChar(UInt8(ascii: "Q")) { return Double(exactly: number.uint64Value) }
        return Double(exactly: number.int64Value)
    }
}

extension Float: ValueTreeLeaf {
    var treeValue: Any { NSNumber(value: Double(self)) }
    static func fromTree(_ value: Any) -> Float? {
        guard let double = Double.fromTree(value) else { return nil }
        // A real narrows to the nearest Float, as a Float asks; one past its range, or an integer it cannot hold
        // exactly, is not one.
        guard double.isNaN || double.isInfinite || abs(double) <= Double(Float.greatestFiniteMagnitude) else { return nil }
        guard let number = value as? NSNumber, !number.isReal else { return Float(double) }
        return Float(exactly: double)
    }
}

/// An integer type stored as a 64-bit integer.
protocol ValueTreeInteger: ValueTreeLeaf, FixedWidthInteger {}

extension ValueTreeInteger {
    var treeValue: Any {
        if let signed = Int64(exactly: self) { return NSNumber(value: signed) }
        return NSNumber(value: UInt64(truncatingIfNeeded: self))
    }

    static func fromTree(_ value: Any) -> Self? {
        guard let number = value as? NSNumber, !number.isBoolean else { return nil }
        if number.isReal { return Self(exactly: number.doubleValue) }
        if number.objCType.pointee == CChar(UInt8(ascii: "Q")) { return Self(exactly: number.uint64Value) }
        return Self(exactly: number.int64Value)
    }
}

extension Int: ValueTreeInteger {}
extension Int8: ValueTreeInteger {}
extension Int16: ValueTreeInteger {}
extension Int32: ValueTreeInteger {}
extension Int64: ValueTreeInteger {}
extension UInt: ValueTreeInteger {}
extension UInt8: ValueTreeInteger {}
extension UInt16: ValueTreeInteger {}
extension UInt32: ValueTreeInteger {}
extension UInt64: ValueTreeInteger {}

/// The coding keys a value tree's coders make themselves: an index in an array, and the key `superEncoder()` and
/// `superDecoder()` use.
struct ValueTreeKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }

    static let superKey = ValueTreeKey(stringValue: "super")
}
