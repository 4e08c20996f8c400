import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// Every keyed `NSCoder` method a class of the user's own may call from `encode(with:)` and `init?(coder:)` is
/// answered by Wormhole's coders, or fails with an error: never a trap, and on Apple platforms never the base
/// class's Objective-C exception. The calls below are those of `NSCoder.h` that this Foundation offers; the ones
/// only Apple's Foundation has are compiled there (``PlatformCoder`` lists what it answers).
@Suite("The coders answer every keyed NSCoder method", .throttled)
struct CoderSurfaceTests {
    private let classes: [AnyClass] = [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, EveryKeyedCall.self]

    @Test("every keyed method, written and read back, with the values written")
    func everyMethodAnswers() throws {
        let archive = try UserInfoCodec.encode(["object": EveryKeyedCall()], maximumSize: 1 << 20)
        let decoded = try UserInfoCodec.decode(archive, allowed: AllowedClasses(classes))
        let object = try #require(decoded["object"] as? EveryKeyedCall)
        #expect(object.mismatches == [], "read back otherwise: \(object.mismatches)")
        #expect(object.called == EveryKeyedCall.decodingCalls, "not every call was made")
    }

    @Test("each keyed decoding method asked for a field of another kind, and failWithError, refuse the object, never trap",
        arguments: 0..<EveryKeyedCall.wrongKindCalls)
    func wrongKinds(call: Int) throws {
        let archive = try UserInfoCodec.encode(["object": EveryKeyedCall(wrongKindCall: call)], maximumSize: 1 << 20)
        #expect(throws: WormholeError.self) { try UserInfoCodec.decode(archive, allowed: AllowedClasses(classes)) }
    }
}

/// A class that writes a field with every keyed encoding method, then reads each back with every keyed decoding
/// method that applies, noting what differs. With `wrongKindCall`, it instead makes one decoding call of the
/// wrong kind, which must make the decoding fail.
final class EveryKeyedCall: NSObject, NSSecureCoding {
    static let supportsSecureCoding = true
    /// How many decoding calls ``init(coder:)`` makes when reading back.
    static var decodingCalls: Int {
        #if canImport(ObjectiveC)
        return 26
        #else
        return 21
        #endif
    }
    static let wrongKindCalls = 10

    private(set) var mismatches: [String] = []
    private(set) var called = 0
    private let wrongKindCall: Int

    init(wrongKindCall: Int = -1) { self.wrongKindCall = wrongKindCall }

    func encode(with coder: NSCoder) {
        coder.encode(wrongKindCall, forKey: "wrongKindCall")
        coder.encode("text" as NSString, forKey: "object")
        coder.encodeConditionalObject("unwritten" as NSString, forKey: "conditional")
        coder.encode(true, forKey: "bool")
        coder.encode(Int32(-32), forKey: "int32")
        coder.encode(Int64(1) << 40, forKey: "int64")
        coder.encode(-7, forKey: "integer")
        coder.encode(Float(1.5), forKey: "float")
        coder.encode(2.25, forKey: "double")
        coder.encodeBytes([1, 2, 3], length: 3, forKey: "bytes")
        coder.encode(["a", "b"] as NSArray, forKey: "array")
        coder.encode(["k": 1] as NSDictionary, forKey: "dictionary")
        #if canImport(ObjectiveC)
        coder.encodeCInt(33, forKey: "cint")
        #else
        coder.encode(Int32(33), forKey: "cint")
        #endif
    }

    init?(coder: NSCoder) {
        wrongKindCall = coder.decodeInteger(forKey: "wrongKindCall")
        super.init()
        guard wrongKindCall < 0 else {
            switch wrongKindCall {
            case 0: _ = coder.decodeBool(forKey: "object")
            case 1: _ = coder.decodeInt32(forKey: "object")
            case 2: _ = coder.decodeInt64(forKey: "bytes")
            case 3: _ = coder.decodeDouble(forKey: "array")
            case 4: _ = coder.decodeObject(forKey: "integer")
            case 5: _ = coder.decodeObject(of: NSNumber.self, forKey: "object")
            case 6: _ = coder.decodeObject(of: [NSData.self], forKey: "array")
            case 7: _ = coder.decodePropertyList(forKey: "bool")
            case 8: coder.failWithError(CocoaError(.coderValueNotFound))
            default: _ = coder.decodeInt32(forKey: "int64")
            }
            return
        }
        func check(_ name: String, _ matches: Bool) {
            called += 1
            if !matches { mismatches.append(name) }
        }
        check("containsValue", coder.containsValue(forKey: "object") && !coder.containsValue(forKey: "missing"))
        check("decodeObject(forKey:)", coder.decodeObject(forKey: "object") as? String == "text")
        check("decodeObject(of: T.self)", coder.decodeObject(of: NSString.self, forKey: "object") == "text")
        check("decodeObject(of: [AnyClass])", coder.decodeObject(of: [NSString.self], forKey: "object") as? String == "text")
        check("conditional object", coder.decodeObject(forKey: "conditional") == nil)
        check("decodePropertyList(forKey:)", coder.decodePropertyList(forKey: "array") as? [String] == ["a", "b"])
        check("decodeBool", coder.decodeBool(forKey: "bool"))
        check("decodeCInt", coder.decodeCInt(forKey: "cint") == 33)
        check("decodeInt32", coder.decodeInt32(forKey: "int32") == -32)
        check("decodeInt64", coder.decodeInt64(forKey: "int64") == 1 << 40)
        check("decodeInteger", coder.decodeInteger(forKey: "integer") == -7)
        check("decodeFloat", coder.decodeFloat(forKey: "float") == 1.5)
        check("decodeDouble", coder.decodeDouble(forKey: "double") == 2.25)
        check("missing key", coder.decodeInt64(forKey: "missing") == 0 && coder.decodeObject(forKey: "missing") == nil)
        check("requiresSecureCoding", coder.requiresSecureCoding && coder.allowsKeyedCoding)
        check("decodingFailurePolicy", coder.decodingFailurePolicy == .setErrorAndReturn)
        check("error", coder.error == nil)
        #if canImport(ObjectiveC)
        check("allowedClasses", coder.allowedClasses?.isEmpty == false)
        var length = 0
        let bytes = coder.decodeBytes(forKey: "bytes", returnedLength: &length)
        check("decodeBytes(forKey:returnedLength:)", length == 3 && bytes.map { Array(UnsafeBufferPointer(start: $0, count: length)) } == [1, 2, 3])
        check("decodeTopLevelObject(forKey:)", (try? coder.decodeTopLevelObject(forKey: "object")) as? String == "text")
        check("decodeTopLevelObject(of: T.self)", (try? coder.decodeTopLevelObject(of: NSString.self, forKey: "object")) == "text")
        check("decodeTopLevelObject(of: [AnyClass])", (try? coder.decodeTopLevelObject(of: [NSString.self], forKey: "object")) as? String == "text")
        check("decodeArrayOfObjects(ofClass:)", coder.decodeArrayOfObjects(ofClass: NSString.self, forKey: "array") == ["a", "b"])
        check("decodeArrayOfObjects(ofClasses:)", coder.decodeArrayOfObjects(ofClasses: [NSString.self], forKey: "array") as? [String] == ["a", "b"])
        check("decodeDictionary(withKeyClass:objectClass:)", coder.decodeDictionary(withKeyClass: NSString.self, objectClass: NSNumber.self, forKey: "dictionary") == ["k": 1])
        check("decodeDictionary(withKeysOfClasses:objectsOfClasses:)",
            coder.decodeDictionary(withKeysOfClasses: [NSString.self], objectsOfClasses: [NSNumber.self], forKey: "dictionary")?["k"] as? Int == 1)
        #else
        check("allowedClasses", coder.allowedClasses?.isEmpty == false)
        check("withDecodedUnsafeBytes", coder.withDecodedUnsafeBytes(forKey: "bytes") { $0.map(Array.init) } == [1, 2, 3])
        check("withDecodedUnsafeBufferPointer", coder.withDecodedUnsafeBufferPointer(forKey: "bytes") { $0.map(Array.init) } == [1, 2, 3])
        check("no bytes", coder.withDecodedUnsafeBytes(forKey: "missing") { $0 == nil })
        #endif
    }
}
