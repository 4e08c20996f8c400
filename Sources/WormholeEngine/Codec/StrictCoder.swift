import Foundation

/// The root of Wormhole's coders: it records the first failure, whether the coder's or the class's own
/// (`failWithError(_:)`), and never raises or traps for it.
class FailingCoder: NSCoder {
    /// The first error recorded, by the coder or by the class through `failWithError(_:)`.
    private(set) var failure: (any Error)?

    /// Records `detail` as the coder's error unless an earlier one is recorded.
    final func fail(_ detail: String) {
        if failure == nil { failure = WormholeError(.corruptData, detail) }
    }

    /// Records that the class called `method`, which Wormhole's keyed coders do not serve.
    final func unserved(_ method: String) {
        fail("\(method) is not supported by Wormhole's keyed coders")
    }

    // What the platform's coder (``PlatformCoder``) answers its Foundation's own spellings with; served by
    // ``KeyedObjectDecoder``.

    /// The classes the coder allows, as `allowedClasses` reports them.
    func allowedClassList() -> [AnyClass]? { nil }

    /// The object at `key` if it is of one of `classes` (any class for nil); nil, with an error recorded, when
    /// it is not.
    func decodeObject(ofAnyOf classes: [AnyClass]?, forKey key: String) -> Any? {
        unserved("decodeObject(of:forKey:)")
        return nil
    }

    /// The bytes at `key`; nil when there are none (an error recorded when the field is of another kind).
    func decodedBytes(forKey key: String) -> [UInt8]? {
        unserved("decodeBytes(forKey:)")
        return nil
    }

    override var decodingFailurePolicy: NSCoder.DecodingFailurePolicy { .setErrorAndReturn }
    override var error: (any Error)? { failure }

    override func failWithError(_ error: any Error) {
        if failure == nil { failure = error }
    }
}

/// An `NSCoder` whose every method either is served by a subclass or fails with an error: never a trap, and
/// never an Objective-C exception.
///
/// Foundation's `NSCoder` traps on Linux (`NSRequiresConcreteImplementation`, `fatalError`), and raises an
/// exception Swift cannot catch on Apple platforms, in each method a subclass does not override, and in
/// `failWithError(_:)` under its default failure policy. A class of the user's own may call any of them from
/// `init?(coder:)` or `encode(with:)`; here each one records an error, which the caller turns into a refused
/// value, and returns an empty result. The methods whose Swift spelling differs between Foundations (allowed
/// classes, decoding of several classes, raw bytes, and on Apple platforms the top-level, array and dictionary
/// forms) are answered by ``PlatformCoder``, once per platform, in terms of three methods of
/// ``FailingCoder``'s: ``FailingCoder/allowedClassList()``, ``FailingCoder/decodeObject(ofAnyOf:forKey:)`` and
/// ``FailingCoder/decodedBytes(forKey:)``. ``KeyedObjectDecoder`` and ``KeyedObjectEncoder`` override what
/// they serve.
class StrictCoder: PlatformCoder {
    override var allowsKeyedCoding: Bool { true }
    override var requiresSecureCoding: Bool { true }
    override var systemVersion: UInt32 { 1000 }

    // Unkeyed coding: not part of the keyed format.
    override func encodeValue(ofObjCType type: UnsafePointer<Int8>, at addr: UnsafeRawPointer) {
        unserved("encodeValue(ofObjCType:at:)")
    }
    override func encode(_ data: Data) { unserved("encode(_:) of Data") }
    override func decodeData() -> Data? {
        unserved("decodeData()")
        return nil
    }
    override func decodeObject() -> Any? {
        unserved("decodeObject()")
        return nil
    }
    override func version(forClassName className: String) -> Int { 0 }

    // Keyed encoding: served by the encoder.
    override func encode(_ objv: Any?, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encodeConditionalObject(_ objv: Any?, forKey key: String) {
        unserved("encodeConditionalObject(_:forKey:)")
    }
    override func encode(_ boolv: Bool, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encode(_ intv: Int32, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encode(_ intv: Int64, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encode(_ intv: Int, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encode(_ realv: Float, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encode(_ realv: Double, forKey key: String) { unserved("encode(_:forKey:)") }
    override func encodeBytes(_ bytesp: UnsafePointer<UInt8>?, length lenv: Int, forKey key: String) {
        unserved("encodeBytes(_:length:forKey:)")
    }

    // Keyed decoding: served by the decoder.
    override func containsValue(forKey key: String) -> Bool { false }
    override func decodeObject(forKey key: String) -> Any? {
        unserved("decodeObject(forKey:)")
        return nil
    }
    override func decodePropertyList(forKey key: String) -> Any? {
        decodeObject(ofAnyOf: AllowedClasses.propertyList.classes, forKey: key)
    }
    override func decodeBool(forKey key: String) -> Bool {
        unserved("decodeBool(forKey:)")
        return false
    }
    override func decodeInt32(forKey key: String) -> Int32 {
        unserved("decodeInt32(forKey:)")
        return 0
    }
    override func decodeInt64(forKey key: String) -> Int64 {
        unserved("decodeInt64(forKey:)")
        return 0
    }
    override func decodeInteger(forKey key: String) -> Int { Int(truncatingIfNeeded: decodeInt64(forKey: key)) }
    override func decodeFloat(forKey key: String) -> Float {
        unserved("decodeFloat(forKey:)")
        return 0
    }
    override func decodeDouble(forKey key: String) -> Double {
        unserved("decodeDouble(forKey:)")
        return 0
    }
}
