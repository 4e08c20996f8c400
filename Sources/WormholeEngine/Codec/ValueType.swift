import Foundation

/// The identities of the concrete types userInfo values most often have, compared before any dynamic cast by
/// the encoders: a failed cast costs more than the comparison, and a cast of a Swift value to a class it is not
/// (`[String]` to `NSNumber`, say) bridges the value to its Foundation class first, only to fail. Computed where
/// they are used rather than stored: a stored static is initialised lazily, and every read of one checks that first.
enum ValueType {
    @inline(__always) static var string: ObjectIdentifier { ObjectIdentifier(String.self) }
    @inline(__always) static var int: ObjectIdentifier { ObjectIdentifier(Int.self) }
    @inline(__always) static var double: ObjectIdentifier { ObjectIdentifier(Double.self) }
    @inline(__always) static var bool: ObjectIdentifier { ObjectIdentifier(Bool.self) }
    @inline(__always) static var data: ObjectIdentifier { ObjectIdentifier(Data.self) }
    @inline(__always) static var date: ObjectIdentifier { ObjectIdentifier(Date.self) }
    @inline(__always) static var url: ObjectIdentifier { ObjectIdentifier(URL.self) }
    @inline(__always) static var uuid: ObjectIdentifier { ObjectIdentifier(UUID.self) }
    @inline(__always) static var number: ObjectIdentifier { ObjectIdentifier(NSNumber.self) }
    @inline(__always) static var stringDictionary: ObjectIdentifier { ObjectIdentifier([String: Any].self) }
    @inline(__always) static var dictionary: ObjectIdentifier { ObjectIdentifier([AnyHashable: Any].self) }
    @inline(__always) static var array: ObjectIdentifier { ObjectIdentifier([Any].self) }
    @inline(__always) static var stringArray: ObjectIdentifier { ObjectIdentifier([String].self) }
    @inline(__always) static var set: ObjectIdentifier { ObjectIdentifier(Set<AnyHashable>.self) }

    /// `value` as a `T`, when `T` is exactly the type it is held as (not a protocol, an `Optional`, a bridged
    /// type, or a value boxed in `Any` twice): taken as it is, with no dynamic cast, which costs about 500
    /// instructions even when it matches. Nil for any other type. An object held as its superclass `T` is
    /// taken too: callers that need its exact class compare `type(of:)` first, as the encoders do.
    @inline(__always)
    static func exactly<T>(_ value: Any, _ type: T.Type) -> T? {
        func opened<V>(_ value: V) -> T? {
            guard V.self == T.self else { return nil }
            return unsafeBitCast(value, to: T.self)
        }
        return opened(value)
    }
}

/// A Swift array, dictionary or set, of any element type: what the compact writer walks without converting it.
///
/// Found by a cast to this protocol, which looks up a conformance and never bridges. The casts it stands in
/// for, to `[Any]`, `[AnyHashable: Any]` or `Set<AnyHashable>`, copy every element into a new collection, and a
/// cast of a Swift collection to a class it is not (`NSNumber`) bridges it to its Foundation class, only to
/// fail. A Foundation collection (`NSArray`, `NSDictionary`, `NSSet`) does not conform: those casts find it.
protocol SwiftCollection {
    /// Which of the three it is.
    static var shape: CollectionShape { get }
    var count: Int { get }
    /// Calls `body` with each element in order (key nil), each member of a set, or each key and value of a
    /// dictionary, as the casts to `[Any]`, `Set<AnyHashable>` (a member's `base`) and `[AnyHashable: Any]`
    /// give them; stops at the first false `body` returns, and returns false then.
    func forEachElement(_ body: (_ key: AnyHashable?, _ value: Any) -> Bool) -> Bool
}

enum CollectionShape {
    case array, set, dictionary
}

extension Array: SwiftCollection {
    static var shape: CollectionShape { .array }

    func forEachElement(_ body: (_ key: AnyHashable?, _ value: Any) -> Bool) -> Bool {
        allSatisfy { body(nil, $0) }
    }
}

extension Set: SwiftCollection {
    static var shape: CollectionShape { .set }

    func forEachElement(_ body: (_ key: AnyHashable?, _ value: Any) -> Bool) -> Bool {
        allSatisfy { body(nil, AnyHashable($0).base) }
    }
}

extension Dictionary: SwiftCollection {
    static var shape: CollectionShape { .dictionary }

    func forEachElement(_ body: (_ key: AnyHashable?, _ value: Any) -> Bool) -> Bool {
        allSatisfy { body(AnyHashable($0.key), $0.value) }
    }
}

extension SwiftCollection {
    /// The elements, each member of a set, or the keys and values, collected as ``forEachElement(_:)`` gives them.
    var collected: (keys: [AnyHashable], values: [Any]) {
        var keys: [AnyHashable] = []
        var values: [Any] = []
        values.reserveCapacity(count)
        _ = forEachElement { key, value in
            if let key { keys.append(key) }
            values.append(value)
            return true
        }
        return (keys, values)
    }
}
