import Foundation

/// An `NSCoder` whose every method either is served by a subclass or fails with an error: never a trap.
///
/// Foundation's `NSCoder` on Linux traps (`NSRequiresConcreteImplementation`, `fatalError`) in each method a
/// subclass does not override, and in `failWithError(_:)` under its default failure policy. A class of the
/// user's own may call any of them from `init?(coder:)` or `encode(with:)`; here each one records an error,
/// which the caller turns into a refused value, and returns an empty result. ``KeyedObjectDecoder`` and
/// ``KeyedObjectEncoder`` override what they serve.
class StrictCoder: NSCoder {
    /// The first error recorded, by the coder or by the class through `failWithError(_:)`.
    private(set) var failure: (any Error)?

    /// Records `detail` as the coder's error unless an earlier one is recorded.
    final func fail(_ detail: String) {
        if failure == nil { failure = WormholeError(.corruptData, detail) }
    }

    private func unserved(_ method: String) {
        fail("\(method) is not supported by Wormhole's keyed coders")
    }

    override var allowsKeyedCoding: Bool { true }
    override var requiresSecureCoding: Bool { true }
    override var decodingFailurePolicy: NSCoder.DecodingFailurePolicy { .setErrorAndReturn }
    override var error: (any Error)? { failure }
    override var systemVersion: UInt32 { 1000 }
    override var allowedClasses: [AnyClass]? { nil }

    override func failWithError(_ error: any Error) {
        if failure == nil { failure = error }
    }

    // Unkeyed coding: not part of the keyed format.
    override func encodeValue(ofObjCType type: UnsafePointer<Int8>, at addr: UnsafeRawPointer) {
        unserved("encodeValue(ofObjCType:at:)")
    }
    override func decodeValue(ofObjCType type: UnsafePointer<Int8>, at data: UnsafeMutableRawPointer) {
        unserved("decodeValue(ofObjCType:at:)")
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
    override func encodePropertyList(_ aPropertyList: Any) { unserved("encodePropertyList(_:)") }
    override func decodePropertyList() -> Any? {
        unserved("decodePropertyList()")
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
    override func decodeObject(of classes: [AnyClass]?, forKey key: String) -> Any? {
        unserved("decodeObject(of:forKey:)")
        return nil
    }
    override func decodePropertyList(forKey key: String) -> Any? {
        unserved("decodePropertyList(forKey:)")
        return nil
    }
    override func decodeBool(forKey key: String) -> Bool {
        unserved("decodeBool(forKey:)")
        return false
    }
    override func decodeCInt(forKey key: String) -> Int32 { decodeInt32(forKey: key) }
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
    override func withDecodedUnsafeBytes<ResultType>(
        forKey key: String, body: (UnsafeRawBufferPointer?) throws -> ResultType
    ) rethrows -> ResultType {
        unserved("withDecodedUnsafeBytes(forKey:body:)")
        return try body(nil)
    }
    override func withDecodedUnsafeBufferPointer<ResultType>(
        forKey key: String, body: (UnsafeBufferPointer<UInt8>?) throws -> ResultType
    ) rethrows -> ResultType {
        try withDecodedUnsafeBytes(forKey: key) { raw in try body(raw.map { $0.bindMemory(to: UInt8.self) }) }
    }
}
