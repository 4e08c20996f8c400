#if canImport(ObjectiveC)
import Foundation
import ObjectiveC

/// `NSCoder`'s keyed methods as Apple's Foundation has them, where it spells them otherwise than
/// swift-corelibs-foundation, answered through three methods of ``FailingCoder`` (see ``StrictCoder``).
///
/// On Apple platforms any `NSCoder` method a subclass does not override raises an Objective-C exception, which
/// Swift cannot catch: a class's `init?(coder:)` calling it would crash the receiver. So every keyed and
/// secure-coding method of `NSCoder.h` is answered here or in ``StrictCoder``:
/// - `encodeObject:forKey:`, `encodeConditionalObject:forKey:`, `encodeBool:forKey:`, `encodeInt:forKey:`,
///   `encodeInt32:forKey:`, `encodeInt64:forKey:`, `encodeInteger:forKey:`, `encodeFloat:forKey:`,
///   `encodeDouble:forKey:`, `encodeBytes:length:forKey:`;
/// - `containsValueForKey:`, `decodeObjectForKey:`, `decodeBoolForKey:`, `decodeIntForKey:`,
///   `decodeInt32ForKey:`, `decodeInt64ForKey:`, `decodeIntegerForKey:`, `decodeFloatForKey:`,
///   `decodeDoubleForKey:`, `decodeBytesForKey:returnedLength:`, `decodePropertyListForKey:`;
/// - `decodeObjectOfClass:forKey:`, `decodeObjectOfClasses:forKey:`, `decodeArrayOfObjectsOfClass:forKey:`,
///   `decodeArrayOfObjectsOfClasses:forKey:`, `decodeDictionaryWithKeysOfClass:objectsOfClass:forKey:`,
///   `decodeDictionaryWithKeysOfClasses:objectsOfClasses:forKey:` (what Swift's `decodeObject(of:forKey:)`,
///   `decodeArrayOfObjects(ofClass:forKey:)` and `decodeDictionary(withKeyClass:objectClass:forKey:)` send);
/// - `decodeObjectOfClass:forKey:`, `decodeTopLevelObjectForKey:error:`, `decodeTopLevelObjectOfClass:forKey:error:`,
///   `decodeTopLevelObjectOfClasses:forKey:error:` and `decodeTopLevelObjectAndReturnError:` (what Swift's generic
///   `decodeObject(of:forKey:)` and `decodeTopLevelObject…` send), which Swift cannot override: added through the
///   Objective-C runtime;
/// - `allowedClasses`, `requiresSecureCoding`, `decodingFailurePolicy`, `error`, `failWithError:`;
/// - and the unkeyed primitives every other unkeyed method goes through (`encodeValueOfObjCType:at:`,
///   `decodeValueOfObjCType:at:size:`, `encodeDataObject:`, `decodeDataObject`, `versionForClassName:`), refused.
class PlatformCoder: FailingCoder {
    /// Bytes handed out by `decodeBytes(forKey:returnedLength:)`, which must stay valid as long as the coder.
    private var lentBytes: [NSData] = []

    override init() {
        _ = Self.topLevelMethods
        super.init()
    }

    override var allowedClasses: Set<AnyHashable>? {
        guard let classes = allowedClassList() else { return nil }
        return NSSet(array: classes.map { $0 as AnyObject }) as? Set<AnyHashable>
    }

    override func __decodeObject(ofClasses classes: Set<AnyHashable>?, forKey key: String) -> Any? {
        decodeObject(ofAnyOf: classes.map(Self.classes(in:)), forKey: key)
    }

    override func __decodeArrayOfObjects(of cls: AnyClass, forKey key: String) -> [Any]? {
        decodeArray(of: [cls], forKey: key)
    }

    override func __decodeArrayOfObjects(ofClasses classes: Set<AnyHashable>, forKey key: String) -> [Any]? {
        decodeArray(of: Self.classes(in: classes), forKey: key)
    }

    override func __decodeDictionary(
        withKeysOf keyClass: AnyClass, objectsOf objectClass: AnyClass, forKey key: String
    ) -> [AnyHashable: Any]? {
        decodeDictionary(keys: [keyClass], objects: [objectClass], forKey: key)
    }

    override func __decodeDictionary(
        withKeysOfClasses keyClasses: Set<AnyHashable>, objectsOfClasses objectClasses: Set<AnyHashable>, forKey key: String
    ) -> [AnyHashable: Any]? {
        decodeDictionary(keys: Self.classes(in: keyClasses), objects: Self.classes(in: objectClasses), forKey: key)
    }

    override func encodeCInt(_ value: Int32, forKey key: String) { encode(value, forKey: key) }
    override func decodeCInt(forKey key: String) -> Int32 { decodeInt32(forKey: key) }

    override func decodeBytes(forKey key: String, returnedLength lengthp: UnsafeMutablePointer<Int>?) -> UnsafePointer<UInt8>? {
        lengthp?.pointee = 0
        guard let bytes = decodedBytes(forKey: key) else { return nil }
        let data = NSData(bytes: bytes, length: bytes.count)
        lentBytes.append(data)
        lengthp?.pointee = data.length
        return data.bytes.assumingMemoryBound(to: UInt8.self)
    }

    // Unkeyed coding, where only this Foundation spells it so: not part of the keyed format.
    override func decodeValue(ofObjCType type: UnsafePointer<CChar>, at data: UnsafeMutableRawPointer, size: Int) {
        unserved("decodeValue(ofObjCType:at:size:)")
    }

    /// The array at `key` whose every element is of one of `classes`.
    private func decodeArray(of classes: [AnyClass], forKey key: String) -> [Any]? {
        guard let value = decodeObject(ofAnyOf: [NSArray.self], forKey: key) else { return nil }
        guard let array = value as? [Any], array.allSatisfy({ AllowedClasses.value($0, isOneOf: classes) }) else {
            fail("\(key) is not an array of the classes asked for")
            return nil
        }
        return array
    }

    /// The dictionary at `key` whose keys and objects are each of one of their classes.
    private func decodeDictionary(keys: [AnyClass], objects: [AnyClass], forKey key: String) -> [AnyHashable: Any]? {
        guard let value = decodeObject(ofAnyOf: [NSDictionary.self], forKey: key) else { return nil }
        guard let dictionary = value as? [AnyHashable: Any],
            dictionary.allSatisfy({ AllowedClasses.value($0.key.base, isOneOf: keys) && AllowedClasses.value($0.value, isOneOf: objects) })
        else {
            fail("\(key) is not a dictionary of the classes asked for")
            return nil
        }
        return dictionary
    }

    private static func classes(in set: Set<AnyHashable>) -> [AnyClass] {
        set.compactMap { $0.base as AnyObject as? AnyClass }
    }

    // MARK: What Swift cannot override

    /// Adds, once, the methods Swift cannot override (unavailable in Swift) to this class, so that a class's
    /// `decodeObject(of: T.self, forKey:)` and `decodeTopLevelObject…` reach the coder instead of `NSCoder`'s,
    /// which raises.
    private static let topLevelMethods: Void = {
        let forKey: @convention(block) (PlatformCoder, NSString, AutoreleasingUnsafeMutablePointer<NSError?>?) -> AnyObject? = {
            coder, key, error in coder.topLevel(coder.decodeObject(forKey: key as String), error)
        }
        let ofClass: @convention(block) (PlatformCoder, AnyClass, NSString, AutoreleasingUnsafeMutablePointer<NSError?>?) -> AnyObject? = {
            coder, aClass, key, error in coder.topLevel(coder.decodeObject(ofAnyOf: [aClass], forKey: key as String), error)
        }
        // What the generic decodeObject(of: T.self, forKey:) sends; unavailable to override from Swift.
        let objectOfClass: @convention(block) (PlatformCoder, AnyClass, NSString) -> AnyObject? = { coder, aClass, key in
            coder.decodeObject(ofAnyOf: [aClass], forKey: key as String).map { $0 as AnyObject }
        }
        let ofClasses: @convention(block) (PlatformCoder, NSSet?, NSString, AutoreleasingUnsafeMutablePointer<NSError?>?) -> AnyObject? = {
            coder, classes, key, error in
            let list = classes.map { $0.allObjects.compactMap { $0 as AnyObject as? AnyClass } }
            return coder.topLevel(coder.decodeObject(ofAnyOf: list, forKey: key as String), error)
        }
        let unkeyed: @convention(block) (PlatformCoder, AutoreleasingUnsafeMutablePointer<NSError?>?) -> AnyObject? = {
            coder, error in
            coder.unserved("decodeTopLevelObject()")
            return coder.topLevel(nil, error)
        }
        add("decodeObjectOfClass:forKey:", objectOfClass, "@@:#@")
        add("decodeTopLevelObjectForKey:error:", forKey, "@@:@^@")
        add("decodeTopLevelObjectOfClass:forKey:error:", ofClass, "@@:#@^@")
        add("decodeTopLevelObjectOfClasses:forKey:error:", ofClasses, "@@:@@^@")
        add("decodeTopLevelObjectAndReturnError:", unkeyed, "@@:^@")
    }()

    private static func add(_ selector: String, _ block: Any, _ types: String) {
        _ = class_addMethod(PlatformCoder.self, NSSelectorFromString(selector), imp_implementationWithBlock(block), types)
    }

    /// A top-level decoding's result: the value, or nil and the coder's error.
    private func topLevel(_ value: Any?, _ error: AutoreleasingUnsafeMutablePointer<NSError?>?) -> AnyObject? {
        if let failure {
            error?.pointee = failure as NSError
            return nil
        }
        return value.map { $0 as AnyObject }
    }
}

extension FoundationClasses {
    /// Whether a class Swift places in the module `__C` (written in Objective-C) is the system's rather than the
    /// user's: by where its code was loaded from.
    static func isSystemObjectiveCClass(_ type: AnyClass) -> Bool {
        let path = Bundle(for: type).bundlePath
        return path.hasPrefix("/System/") || path.hasPrefix("/usr/lib/") || path.hasPrefix("/Library/Apple/")
    }
}
#endif
