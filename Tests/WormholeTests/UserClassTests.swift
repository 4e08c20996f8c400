import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Classes of the user's own: Wormhole's coders, both ways, and Foundation's archives", .throttled)
struct UserClassTests {
    private let shapeClasses: [AnyClass] = [
        NSDictionary.self, NSString.self, TestShape.self, TestPoint.self, NSArray.self, NSURL.self, NSUUID.self, NSSet.self,
    ]

    @Test("a user class nesting others and collections of them round-trips through Wormhole's coders")
    func roundTrip() throws {
        for seed in 0..<20 {
            let shape = TestShape.sample(seed)
            let archive = try UserInfoCodec.encode(["shape": shape, "list": [shape, TestShape.sample(seed + 1)]], maximumSize: 1 << 20)
            let decoded = try UserInfoCodec.decode(archive, allowed: AllowedClasses(shapeClasses))
            let back = try #require(decoded["shape"] as? TestShape)
            #expect(back.same(as: shape))
            let list = try #require(decoded["list"] as? [TestShape])
            #expect(list.count == 2 && list[0] === back, "one instance referenced twice is decoded once")
        }
    }

    @Test("Foundation's unarchiver reads back equal what Wormhole writes for user classes")
    func oursToFoundation() throws {
        for seed in 0..<10 {
            let shape = TestShape.sample(seed)
            let archive = try SecureArchive.archivedData(withRootObject: ["shape": shape])
            let decoded = try NSKeyedUnarchiver.unarchivedObject(
                ofClasses: shapeClasses, from: archive)
            let back = try #require((decoded as? [AnyHashable: Any])?["shape"] as? TestShape)
            #expect(back.same(as: shape))
        }
    }

    @Test("Wormhole reads back equal what Foundation's archiver writes for user classes")
    func foundationToOurs() throws {
        for seed in 0..<10 {
            let shape = TestShape.sample(seed)
            let archive = try NSKeyedArchiver.archivedData(
                withRootObject: NSDictionary(dictionary: ["shape": shape, "again": shape]), requiringSecureCoding: true)
            let decoded = try UserInfoCodec.decode([UInt8](archive), allowed: AllowedClasses(shapeClasses))
            let back = try #require(decoded["shape"] as? TestShape)
            #expect(back.same(as: shape))
            #expect(decoded["again"] as? TestShape === back)
        }
    }

    @Test("sets, URLs, UUIDs and NSNull travel both ways with Foundation")
    func systemClasses() throws {
        let id = UUID()
        let values: [AnyHashable: Any] = [
            "set": Set<AnyHashable>(["a", 1, "b"]), "url": URL(string: "https://example.org/a b?x=1") ?? URL(fileURLWithPath: "/"),
            "relative": URL(string: "c/d", relativeTo: URL(string: "https://example.org/a/")) ?? URL(fileURLWithPath: "/"),
            "id": id, "null": NSNull(),
        ]
        let classes: [AnyClass] = [NSDictionary.self, NSString.self, NSNumber.self, NSSet.self, NSURL.self, NSUUID.self, NSNull.self]
        let ours = try UserInfoCodec.decode(UserInfoCodec.encode(values, maximumSize: 1 << 20), allowed: AllowedClasses(classes))
        let foundationArchive = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: values), requiringSecureCoding: true)
        let theirs = try UserInfoCodec.decode([UInt8](foundationArchive), allowed: AllowedClasses(classes))
        let foundationReads = try #require(try NSKeyedUnarchiver.unarchivedObject(
            ofClasses: classes, from: SecureArchive.archivedData(withRootObject: values)) as? [AnyHashable: Any])
        for decoded in [ours, theirs, foundationReads] {
            // A number in a set is an NSNumber, as from Foundation: compared by what it prints.
            #expect((decoded["set"] as? Set<AnyHashable>).map { Set($0.map { "\($0.base)" }) } == ["a", "1", "b"])
            #expect((decoded["url"] as? URL)?.absoluteString == (values["url"] as? URL)?.absoluteString)
            #expect((decoded["relative"] as? URL)?.absoluteString == "https://example.org/a/c/d")
            #expect(decoded["id"] as? UUID == id)
            #expect(decoded["null"] is NSNull)
        }
        // None of them is a property-list class: the default allowed classes refuse each.
        #expect(throws: WormholeError.self) {
            try UserInfoCodec.decode(UserInfoCodec.encode(["id": id], maximumSize: 1 << 20), allowed: .propertyList)
        }
    }

    @Test("a user class is allowed by its own name only, not through NSObject or a superclass")
    func allowedByName() throws {
        let archive = try UserInfoCodec.encode(["p": TestPoint(x: 1, y: 2)], maximumSize: 1 << 20)
        for classes in [[NSDictionary.self, NSString.self, NSObject.self], [NSDictionary.self, NSString.self]] as [[AnyClass]] {
            #expect { try UserInfoCodec.decode(archive, allowed: AllowedClasses(classes)) } throws: {
                ($0 as? WormholeError)?.code == .disallowedClass
            }
        }
    }

    @Test("posters refuse Foundation classes Wormhole does not carry, and objects that contain themselves")
    func posterRefusals() throws {
        #expect { try UserInfoCodec.encode(["v": NSValue(range: NSRange(location: 1, length: 2))], maximumSize: 1 << 20) } throws: {
            let error = $0 as? WormholeError
            return error?.code == .unsupportedValue && error?.detail.contains("Foundation class") == true
        }
        let loop = TestShape()
        loop.children = [loop]
        #expect { try UserInfoCodec.encode(["loop": loop], maximumSize: 1 << 20) } throws: {
            ($0 as? WormholeError)?.detail.contains("contains itself") == true
        }
    }

    @Test("an archive is never empty: a user class whose encoding fails is an error")
    func encodingFailure() {
        #expect { try SecureArchive.archivedData(withRootObject: ["x": UnkeyedCoding(step: 0)]) } throws: {
            ($0 as? WormholeError)?.code == .unsupportedValue
        }
    }

    @Test("every NSCoder method a class may call is served or refused with an error, never a trap")
    func unservedMethods() throws {
        let classes: [AnyClass] = [NSDictionary.self, NSString.self, UnkeyedCoding.self]
        for step in 0..<UnkeyedCoding.steps {
            // Written by hand: the encoder would refuse what this class does when encoding.
            let archive = CraftedArchive.build([
                .null,
                .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([4]))]),
                .classEntry("NSDictionary"), .string("x"),
                .object(class: 5, fields: [("step", .integer(step)), ("name", .uid(3))]),
                .classEntry(NSStringFromClass(UnkeyedCoding.self)),
            ])
            #expect(throws: WormholeError.self, "step \(step)") {
                try UserInfoCodec.decode(archive, allowed: AllowedClasses(classes))
            }
        }
    }

    @Test("a keyed object claiming a Foundation class Wormhole does not read is corrupt, also when allowed")
    func claimedFoundationClass() {
        // A keyed NSNumber beside a dictionary with more keys than objects: once handed to Foundation, this crashed.
        let archive = CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3, 4])), ("NS.objects", .uids([5, 7]))]),
            .classEntry("NSDictionary"), .string("a"), .string("b"),
            .object(class: 6, fields: [("NS.intval", .integer(3))]), .classEntry("NSNumber"),
            .object(class: 2, fields: [("NS.keys", .uids([3, 4])), ("NS.objects", .uids([3]))]),
        ])
        for classes in [AllowedClasses.propertyList, AllowedClasses([NSObject.self]), AllowedClasses([NSDictionary.self, NSString.self, NSValue.self, NSNumber.self])] {
            #expect { try UserInfoCodec.decode(archive, allowed: classes) } throws: {
                let error = $0 as? WormholeError
                return error?.code == .corruptData && error?.detail.contains("NSNumber") == true
            }
        }
    }

    @Test("an object of the user's own that contains itself is refused")
    func cycle() {
        let name = NSStringFromClass(TestShape.self)
        let archive = CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([4]))]),
            .classEntry("NSDictionary"), .string("name"),
            .object(class: 5, fields: [("name", .uid(3)), ("children", .uid(6))]),
            .classEntry(name),
            .object(class: 7, fields: [("NS.objects", .uids([4]))]), .classEntry("NSArray"),
        ])
        #expect { try UserInfoCodec.decode(archive, allowed: AllowedClasses(shapeClasses)) } throws: {
            ($0 as? WormholeError)?.detail.contains("contains itself") == true
        }
    }
}

/// A class that calls, at decoding step `step`, one of the coder methods keyed coders do not serve.
final class UnkeyedCoding: NSObject, NSSecureCoding {
    static let supportsSecureCoding = true
    static let steps = 12
    let step: Int
    private static let keptCoder = KeptCoder()

    init(step: Int) { self.step = step }

    init?(coder: NSCoder) {
        step = coder.decodeInteger(forKey: "step")
        var scratch = 0
        switch step {
        case 0: _ = coder.decodeObject()
        case 1: _ = coder.decodeData()
        case 2: coder.decodeValue(ofObjCType: "q", at: &scratch)
        case 3: _ = coder.decodePropertyList()
        case 4: coder.failWithError(CocoaError(.coderReadCorrupt))
        case 5: _ = coder.decodeObject(of: [NSNumber.self], forKey: "name")
        case 6: _ = coder.decodeInt64(forKey: "name")
        case 7: coder.encode(1, forKey: "nope")
        case 8: _ = coder.decodeBool(forKey: "name")
        case 9: _ = coder.decodeDouble(forKey: "name")
        case 10: coder.encodeValue(ofObjCType: "q", at: &scratch)
        default:
            // A coder kept past init(coder:) reads nothing later.
            Self.keptCoder.coder = coder
            _ = Self.keptCoder.coder?.decodeObject(forKey: "name")
            coder.failWithError(CocoaError(.coderValueNotFound))
        }
    }

    func encode(with coder: NSCoder) {
        var scratch = step
        coder.encodeValue(ofObjCType: "q", at: &scratch)
    }
}

/// Holds a coder past the call it was given for.
private final class KeptCoder: @unchecked Sendable {  // Safe because: touched by one test at a time.
    var coder: NSCoder?
}
