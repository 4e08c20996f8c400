import Foundation

/// Encodes a `Codable` value as the ``ValueTreeLeaf`` tree a group value is stored as: nil as `NSNull`, every
/// string as itself, numbers exactly. Keyed containers become dictionaries with string keys (a key's
/// `stringValue`), unkeyed ones arrays; a value that asks for no container is an empty dictionary, as with
/// `PropertyListEncoder`.
package enum ValueTreeEncoder {
    /// The tree of `value`.
    /// - Throws: What `value`'s `encode(to:)` throws; `EncodingError.invalidValue` for a value nested deeper than
    ///   ``Limits/archiveMaximumDepth`` (a reference cycle), which no archive would carry anyway.
    package static func encode<T: Encodable>(_ value: T) throws -> Any {
        try box(value, codingPath: []).tree
    }

    fileprivate static func box<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> Node {
        // Deeper than any archive carries: a class that holds itself would recurse until the stack ran out.
        guard codingPath.count <= Limits.archiveMaximumDepth else {
            throw EncodingError.invalidValue(value, .init(
                codingPath: codingPath,
                debugDescription: "nests deeper than \(Limits.archiveMaximumDepth) levels (does a class hold itself?)"))
        }
        let node = Node()
        if let leaf = value as? any ValueTreeLeaf {
            node.leaf = leaf.treeValue
        } else {
            try value.encode(to: TreeEncoder(node: node, codingPath: codingPath))
        }
        return node
    }

    /// A value being built: a leaf, an array or a dictionary of nodes, filled as its containers are.
    fileprivate final class Node {
        var leaf: Any?
        var array: [Node]?
        var dictionary: [String: Node]?

        var tree: Any {
            if let dictionary { return dictionary.mapValues(\.tree) as [String: Any] }
            if let array { return array.map(\.tree) }
            return leaf ?? [String: Any]()
        }

        /// Makes the node a dictionary (keeping what it holds when it is one already).
        func makeDictionary() {
            if dictionary == nil { leaf = nil; array = nil; dictionary = [:] }
        }

        func makeArray() {
            if array == nil { leaf = nil; dictionary = nil; array = [] }
        }

        func set(_ value: Any) {
            array = nil
            dictionary = nil
            leaf = value
        }
    }

}

private typealias Node = ValueTreeEncoder.Node

private struct TreeEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeDictionary()
        return KeyedEncodingContainer(KeyedTreeEncoder(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedTreeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleTreeEncoder(node: node, codingPath: codingPath)
    }
}

private struct KeyedTreeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    private func put(_ child: Node, _ key: any CodingKey) {
        node.dictionary?[key.stringValue] = child
    }

    private func leaf(_ value: Any, _ key: Key) {
        let child = Node()
        child.leaf = value
        put(child, key)
    }

    mutating func encodeNil(forKey key: Key) throws { leaf(NSNull(), key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { leaf(value.treeValue, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { leaf(value.treeValue, key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        put(try ValueTreeEncoder.box(value, codingPath: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = Node()
        put(child, key)
        return TreeEncoder(node: child, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = Node()
        put(child, key)
        return TreeEncoder(node: child, codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = Node()
        put(child, ValueTreeKey.superKey)
        return TreeEncoder(node: child, codingPath: codingPath + [ValueTreeKey.superKey])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = Node()
        put(child, key)
        return TreeEncoder(node: child, codingPath: codingPath + [key])
    }
}

private struct UnkeyedTreeEncoder: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]
    var count: Int { node.array?.count ?? 0 }

    private var nextKey: any CodingKey { ValueTreeKey(intValue: count) }

    private func append(_ child: Node) {
        node.array?.append(child)
    }

    private func leaf(_ value: Any) {
        let child = Node()
        child.leaf = value
        append(child)
    }

    mutating func encodeNil() throws { leaf(NSNull()) }
    mutating func encode(_ value: Bool) throws { leaf(value.treeValue) }
    mutating func encode(_ value: String) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Double) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Float) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Int) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Int8) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Int16) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Int32) throws { leaf(value.treeValue) }
    mutating func encode(_ value: Int64) throws { leaf(value.treeValue) }
    mutating func encode(_ value: UInt) throws { leaf(value.treeValue) }
    mutating func encode(_ value: UInt8) throws { leaf(value.treeValue) }
    mutating func encode(_ value: UInt16) throws { leaf(value.treeValue) }
    mutating func encode(_ value: UInt32) throws { leaf(value.treeValue) }
    mutating func encode(_ value: UInt64) throws { leaf(value.treeValue) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try ValueTreeEncoder.box(value, codingPath: codingPath + [nextKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [nextKey]
        let child = Node()
        append(child)
        return TreeEncoder(node: child, codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [nextKey]
        let child = Node()
        append(child)
        return TreeEncoder(node: child, codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [nextKey]
        let child = Node()
        append(child)
        return TreeEncoder(node: child, codingPath: path)
    }
}

private struct SingleTreeEncoder: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.set(NSNull()) }
    mutating func encode(_ value: Bool) throws { node.set(value.treeValue) }
    mutating func encode(_ value: String) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Double) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Float) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Int) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Int8) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Int16) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Int32) throws { node.set(value.treeValue) }
    mutating func encode(_ value: Int64) throws { node.set(value.treeValue) }
    mutating func encode(_ value: UInt) throws { node.set(value.treeValue) }
    mutating func encode(_ value: UInt8) throws { node.set(value.treeValue) }
    mutating func encode(_ value: UInt16) throws { node.set(value.treeValue) }
    mutating func encode(_ value: UInt32) throws { node.set(value.treeValue) }
    mutating func encode(_ value: UInt64) throws { node.set(value.treeValue) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let boxed = try ValueTreeEncoder.box(value, codingPath: codingPath)
        node.leaf = boxed.leaf
        node.array = boxed.array
        node.dictionary = boxed.dictionary
    }
}
