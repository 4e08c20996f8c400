import Foundation

/// Decodes a `Decodable` value from a ``ValueTreeLeaf`` tree, as ``ValueTreeEncoder`` writes it and another
/// process stored it: `NSNull` is nil, and only `NSNull` (a string `"$null"` is a string).
///
/// A tree of the earlier format (what `PropertyListEncoder` made, where nil is the string `"$null"`) is read
/// with `nullStrings`: there, where the type allows nil, `"$null"` is nil, as `PropertyListDecoder` reads it;
/// where it asks for a string, `"$null"` is that string (which `PropertyListDecoder` refuses).
///
/// The tree is another process's: anything in it that does not fit the type is a `DecodingError`, never a trap.
package enum ValueTreeDecoder {
    /// The value of type `T` that `tree` holds; `userInfo` is the decoders' `userInfo`.
    /// - Throws: `DecodingError` saying where the tree does not fit `T`, and what `T`'s `init(from:)` throws.
    package static func decode<T: Decodable>(
        _ type: T.Type, from tree: Any, userInfo: [CodingUserInfoKey: Any] = [:], nullStrings: Bool = false
    ) throws -> T {
        try unbox(tree, as: type, codingPath: [], context: Context(userInfo: userInfo, nullStrings: nullStrings))
    }

    /// What every container of one decoding shares.
    fileprivate struct Context {
        let userInfo: [CodingUserInfoKey: Any]
        /// Whether the string `"$null"` is nil too (the earlier format).
        let nullStrings: Bool

        func isNil(_ value: Any) -> Bool {
            value is NSNull || (nullStrings && (value as? String) == "$null")
        }
    }

    fileprivate static func unbox<T: Decodable>(
        _ value: Any, as type: T.Type, codingPath: [any CodingKey], context: Context
    ) throws -> T {
        guard let leafType = type as? any ValueTreeLeaf.Type else {
            return try T(from: TreeDecoder(value: value, codingPath: codingPath, context: context))
        }
        if value is NSNull {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "found null"))
        }
        guard let leaf = leafType.fromTree(value) as? T else {
            throw DecodingError.typeMismatch(
                type, .init(codingPath: codingPath, debugDescription: "\(Self.describe(value)) is not a \(type)"))
        }
        return leaf
    }

    /// What a tree's value is, for an error: its kind, and a number's value.
    fileprivate static func describe(_ value: Any) -> String {
        switch value {
        case is NSNull: return "null"
        case is String: return "a string"
        case let number as NSNumber:
            return number.isBoolean ? "a boolean" : number.isReal ? "the real \(number.doubleValue)" : "the integer \(number)"
        case is [Any]: return "an array"
        case is [AnyHashable: Any]: return "a dictionary"
        default: return "a \(Swift.type(of: value))"
        }
    }

    fileprivate static func mismatch(_ type: Any.Type, _ value: Any, _ path: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(describe(value))"))
    }

}

private struct TreeDecoder: Decoder {
    let value: Any
    let codingPath: [any CodingKey]
    let context: ValueTreeDecoder.Context
    var userInfo: [CodingUserInfoKey: Any] { context.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let dictionary = value as? [String: Any] else {
            throw ValueTreeDecoder.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedTreeDecoder(dictionary: dictionary, codingPath: codingPath, context: context))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value as? [Any] else { throw ValueTreeDecoder.mismatch([Any].self, value, codingPath) }
        return UnkeyedTreeDecoder(array: array, codingPath: codingPath, context: context)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleTreeDecoder(value: value, codingPath: codingPath, context: context)
    }
}

private struct KeyedTreeDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let dictionary: [String: Any]
    let codingPath: [any CodingKey]
    let context: ValueTreeDecoder.Context

    var allKeys: [Key] { dictionary.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { dictionary[key.stringValue] != nil }

    private func value(_ key: any CodingKey) throws -> Any {
        guard let value = dictionary[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return value
    }

    private func leaf<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        try ValueTreeDecoder.unbox(try value(key), as: type, codingPath: codingPath + [key], context: context)
    }

    func decodeNil(forKey key: Key) throws -> Bool { context.isNil(try value(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try leaf(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try leaf(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try leaf(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try leaf(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try leaf(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try leaf(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try leaf(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try leaf(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try leaf(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try leaf(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try leaf(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try leaf(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try leaf(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try leaf(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try leaf(type, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try TreeDecoder(value: try value(key), codingPath: codingPath + [key], context: context).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value: try value(key), codingPath: codingPath + [key], context: context).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = ValueTreeKey.superKey
        return TreeDecoder(value: dictionary[key.stringValue] ?? NSNull(), codingPath: codingPath + [key], context: context)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        TreeDecoder(value: dictionary[key.stringValue] ?? NSNull(), codingPath: codingPath + [key], context: context)
    }
}

private struct UnkeyedTreeDecoder: UnkeyedDecodingContainer {
    let array: [Any]
    let codingPath: [any CodingKey]
    let context: ValueTreeDecoder.Context
    private(set) var currentIndex = 0

    init(array: [Any], codingPath: [any CodingKey], context: ValueTreeDecoder.Context) {
        self.array = array
        self.codingPath = codingPath
        self.context = context
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private var path: [any CodingKey] { codingPath + [ValueTreeKey(intValue: currentIndex)] }

    /// The next element, which a successful decoding then moves past.
    private func next(_ type: Any.Type) throws -> Any {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array has no more elements"))
        }
        return array[currentIndex]
    }

    private mutating func leaf<T: Decodable>(_ type: T.Type) throws -> T {
        let decoded = try ValueTreeDecoder.unbox(try next(type), as: type, codingPath: path, context: context)
        currentIndex += 1
        return decoded
    }

    mutating func decodeNil() throws -> Bool {
        guard context.isNil(try next(Never.self)) else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try leaf(type) }
    mutating func decode(_ type: String.Type) throws -> String { try leaf(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try leaf(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try leaf(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try leaf(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try leaf(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try leaf(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try leaf(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try leaf(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try leaf(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try leaf(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try leaf(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try leaf(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try leaf(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try leaf(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let container = try TreeDecoder(value: try next(type), codingPath: path, context: context).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try TreeDecoder(value: try next([Any].self), codingPath: path, context: context).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = TreeDecoder(value: try next(Any.self), codingPath: path, context: context)
        currentIndex += 1
        return decoder
    }
}

private struct SingleTreeDecoder: SingleValueDecodingContainer {
    let value: Any
    let codingPath: [any CodingKey]
    let context: ValueTreeDecoder.Context

    private func leaf<T: Decodable>(_ type: T.Type) throws -> T {
        try ValueTreeDecoder.unbox(value, as: type, codingPath: codingPath, context: context)
    }

    func decodeNil() -> Bool { context.isNil(value) }
    func decode(_ type: Bool.Type) throws -> Bool { try leaf(type) }
    func decode(_ type: String.Type) throws -> String { try leaf(type) }
    func decode(_ type: Double.Type) throws -> Double { try leaf(type) }
    func decode(_ type: Float.Type) throws -> Float { try leaf(type) }
    func decode(_ type: Int.Type) throws -> Int { try leaf(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try leaf(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try leaf(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try leaf(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try leaf(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try leaf(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try leaf(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try leaf(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try leaf(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try leaf(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try leaf(type) }
}
