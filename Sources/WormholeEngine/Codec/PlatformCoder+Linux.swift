#if !canImport(ObjectiveC)
import Foundation

/// `NSCoder`'s methods as swift-corelibs-foundation spells them, where Apple's Foundation spells them
/// otherwise, answered through three methods of ``FailingCoder`` (see ``StrictCoder``).
class PlatformCoder: FailingCoder {
    override var allowedClasses: [AnyClass]? { allowedClassList() }

    override func decodeObject(of classes: [AnyClass]?, forKey key: String) -> Any? {
        decodeObject(ofAnyOf: classes, forKey: key)
    }

    override func decodeCInt(forKey key: String) -> Int32 { decodeInt32(forKey: key) }

    override func withDecodedUnsafeBytes<ResultType>(
        forKey key: String, body: (UnsafeRawBufferPointer?) throws -> ResultType
    ) rethrows -> ResultType {
        guard let bytes = decodedBytes(forKey: key) else { return try body(nil) }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    override func withDecodedUnsafeBufferPointer<ResultType>(
        forKey key: String, body: (UnsafeBufferPointer<UInt8>?) throws -> ResultType
    ) rethrows -> ResultType {
        guard let bytes = decodedBytes(forKey: key) else { return try body(nil) }
        return try bytes.withUnsafeBufferPointer { try body($0) }
    }

    // Unkeyed coding, where only this Foundation has these methods: not part of the keyed format.
    override func decodeValue(ofObjCType type: UnsafePointer<Int8>, at data: UnsafeMutableRawPointer) {
        unserved("decodeValue(ofObjCType:at:)")
    }
    override func encodePropertyList(_ aPropertyList: Any) { unserved("encodePropertyList(_:)") }
    override func decodePropertyList() -> Any? {
        unserved("decodePropertyList()")
        return nil
    }
}

extension FoundationClasses {
    /// Whether a class Swift places in the module `__C` (written in Objective-C) is the system's: always here,
    /// where no code of the user's is Objective-C.
    static func isSystemObjectiveCClass(_ type: AnyClass) -> Bool { true }
}
#endif
