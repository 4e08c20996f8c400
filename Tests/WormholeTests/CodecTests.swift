import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Codec: the archive readers that guard every receiver", .throttled)
struct CodecTests {
    /// A random property-list value, nested up to `depth`.
    private func randomValue(_ generator: inout SeededGenerator, depth: Int) -> Any {
        switch Int.random(in: 0..<(depth > 0 ? 10 : 7), using: &generator) {
        case 0: return Int.random(in: -1_000_000...1_000_000, using: &generator)
        case 1: return Double.random(in: -1e6...1e6, using: &generator)
        case 2: return ["", "$null", "héllo", "✓ unicode ✓", "plain", "NSDictionary"].randomElement(using: &generator) ?? ""
        case 3: return Data((0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        case 4: return Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &generator)))
        case 5: return Int64.random(in: Int64.min...Int64.max, using: &generator)
        case 6: return Bool.random(using: &generator)
        case 7, 8:
            return (0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(&generator, depth: depth - 1) }
        default:
            var dictionary: [String: Any] = [:]
            for index in 0..<Int.random(in: 0...4, using: &generator) { dictionary["k\(index)"] = randomValue(&generator, depth: depth - 1) }
            return dictionary
        }
    }

    /// Property-list equality that does not depend on how numbers were bridged.
    private func same(_ a: Any, _ b: Any) -> Bool {
        // A Swift Bool does not cast to NSNumber on Linux, and a decoded one may be either.
        if type(of: a) == Bool.self || type(of: b) == Bool.self {
            guard let a = a as? Bool, let b = b as? Bool else { return false }
            return a == b
        }
        switch (a, b) {
        case let (a as [AnyHashable: Any], b as [AnyHashable: Any]):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        case let (a as [Any], b as [Any]):
            return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case let (a as String, b as String): return a == b
        case let (a as Data, b as Data): return a == b
        case let (a as Date, b as Date): return a == b
        case let (a as NSNumber, b as NSNumber): return a.int64Value == b.int64Value && a.doubleValue == b.doubleValue
        default: return false
        }
    }

    private func randomUserInfo(_ generator: inout SeededGenerator) -> [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [:]
        for index in 0..<Int.random(in: 1...5, using: &generator) { userInfo["key\(index)"] = randomValue(&generator, depth: 3) }
        return userInfo
    }

    @Test("the value classes and NSObject are named as Foundation names them, without asking it")
    func classNames() {
        for type in AllowedClasses.valueClasses + [NSObject.self] {
            #expect(AllowedClasses.name(of: type) == NSStringFromClass(type))
        }
    }

    @Test("a value is taken as a type without a cast only when that is exactly its type")
    func exactTypes() {
        let text: Any = "cart"
        #expect(ValueType.exactly(text, String.self) == "cart")
        #expect(ValueType.exactly(text, Substring.self) == nil)
        #expect(ValueType.exactly(NSString(string: "cart") as Any, String.self) == nil)
        #expect(ValueType.exactly(42 as Any, Int.self) == 42)
        #expect(ValueType.exactly(42 as Any, Int64.self) == nil)
        #expect(ValueType.exactly(42 as Any, NSNumber.self) == nil)
        let strings: Any = ["a", "b"]
        #expect(ValueType.exactly(strings, [String].self) == ["a", "b"])
        #expect(ValueType.exactly(strings, [Any].self) == nil)
        let tree: Any = ["tags": ["a"]] as [AnyHashable: Any]
        #expect(ValueType.exactly(tree, [AnyHashable: Any].self)?["tags"] as? [String] == ["a"])
        #expect(ValueType.exactly(tree, [String: Any].self) == nil)
        let data = Data([1, 2, 3])
        #expect(ValueType.exactly(data as Any, Data.self) == data)
        #expect(ValueType.exactly(NSData(data: data) as Any, Data.self) == nil)
    }

    @Test("values walked out of a Swift collection of another type, boxed twice, are written compact and read back the same")
    func valuesBoxedTwice() throws {
        let values: [Int: Any] = [1: 2.5, 2: "x", 3: 7, 4: ["a": 1] as [String: Any], 5: [true, "y"] as [Any], 6: ["z"]]
        let walked = try UserInfoCodec.encode(["m": values], maximumSize: 1 << 20)
        #expect(CompactArchive.isCompact(walked))
        // The same values boxed once, in a dictionary the writer takes without walking it.
        let direct: [AnyHashable: Any] = ["m": Dictionary(uniqueKeysWithValues: values.map { (AnyHashable($0.key), $0.value) })]
        let walkedBack = try UserInfoCodec.decode(walked, allowed: .propertyList)
        let directBack = try UserInfoCodec.decode(UserInfoCodec.encode(direct, maximumSize: 1 << 20), allowed: .propertyList)
        #expect((walkedBack as NSDictionary).isEqual(directBack as NSDictionary), "\(walkedBack) != \(directBack)")
        #expect((walkedBack["m"] as? [AnyHashable: Any])?.count == values.count)
    }

    @Test("what Foundation's archiver writes, this decoder reads back equal (500 random values)")
    func foundationToOurs() throws {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<500 {
            let userInfo = randomUserInfo(&generator)
            let archive = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: userInfo), requiringSecureCoding: true)
            let decoded = try UserInfoCodec.decode([UInt8](archive), allowed: .propertyList)
            #expect(same(decoded, userInfo), "\(decoded) != \(userInfo)")
        }
    }

    @Test("what this encoder writes, Foundation's unarchiver reads back equal (500 random values)")
    func oursToFoundation() throws {
        var generator = SeededGenerator(seed: 8)
        var compared = 0
        for _ in 0..<500 {
            let userInfo = randomUserInfo(&generator)
            // Linux Foundation takes any "$null" string for nil and crashes; that is its bug, tested elsewhere.
            guard !"\(userInfo)".contains("$null") else { continue }
            let archive = try SecureArchive.archivedData(withRootObject: userInfo)
            let decoded = try NSKeyedUnarchiver.unarchivedObject(
                ofClasses: [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self], from: archive)
            #expect(decoded.map { same($0, userInfo) } == true, "\(String(describing: decoded)) != \(userInfo)")
            compared += 1
        }
        #expect(compared > 300)
    }

    @Test("what this encoder writes, this decoder reads back equal, \"$null\" strings included (500 random values)")
    func oursToOurs() throws {
        var generator = SeededGenerator(seed: 9)
        for _ in 0..<500 {
            let userInfo = randomUserInfo(&generator)
            let archive = try SecureArchive.archivedData(withRootObject: userInfo)
            let decoded = try SecureArchive.unarchivedObject(
                ofClasses: [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self], from: archive)
            #expect(decoded.map { same($0, userInfo) } == true)
        }
    }

    @Test("what a post sends, a receiver reads back equal, as the keyed archive of it reads (500 random values)")
    func postedToReceived() throws {
        var generator = SeededGenerator(seed: 10)
        for _ in 0..<500 {
            let userInfo = randomUserInfo(&generator)
            let posted = try UserInfoCodec.encode(userInfo, maximumSize: 1 << 20)
            #expect(CompactArchive.isCompact(posted))
            let decoded = try UserInfoCodec.decode(posted, allowed: .propertyList)
            #expect(same(decoded, userInfo))
            let keyed = try UserInfoCodec.decode(KeyedArchiveEncoder.encode(userInfo, maximumSize: 1 << 20), allowed: .propertyList)
            #expect((decoded as NSDictionary).isEqual(keyed as NSDictionary))
        }
    }

    @Test("numbers keep their kind in both formats: Bool, Int, Double, UInt64 above Int64.max, negative integers")
    func numbers() throws {
        let values: [String: Any] = ["t": true, "f": false, "i": -5, "big": UInt64.max, "d": 2.5, "zero": 0, "min": Int64.min]
        let keyed = try #require(try SecureArchive.unarchivedObject(
            ofClasses: [NSDictionary.self, NSNumber.self, NSString.self], from: SecureArchive.archivedData(withRootObject: values)) as? [String: Any])
        let compact = try UserInfoCodec.decode(UserInfoCodec.encode(values, maximumSize: 1 << 20), allowed: .propertyList)
        for decoded in [keyed, compact as? [String: Any] ?? [:]] {
            #expect(decoded["t"] as? Bool == true && decoded["f"] as? Bool == false)
            #expect(decoded["i"] as? Int == -5 && decoded["zero"] as? Int == 0 && decoded["min"] as? Int64 == Int64.min)
            #expect((decoded["big"] as? NSNumber)?.uint64Value == UInt64.max)
            #expect(decoded["d"] as? Double == 2.5)
        }
    }

    @Test("archives as Apple's Foundation writes them decode: mutable classes, NS.string, NS.data objects")
    func appleLayouts() throws {
        // Apple's archiver writes mutable containers under their own class names, strings as inline objects
        // or NSMutableString objects with NS.string, and data inline or as NSMutableData with NS.data.
        let archive = CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3, 4, 5, 6])), ("NS.objects", .uids([7, 9, 11, 13]))]),
            .classEntry("NSMutableDictionary"),
            .string("title"), .string("ids"), .string("blob"), .string("when"),
            .object(class: 8, fields: [("NS.string", .string("Grüße"))]), .classEntry("NSMutableString"),
            .object(class: 10, fields: [("NS.objects", .uids([15, 16]))]), .classEntry("NSMutableArray"),
            .object(class: 12, fields: [("NS.data", .data([1, 2, 3]))]), .classEntry("NSMutableData"),
            .object(class: 14, fields: [("NS.time", .real(0))]), .classEntry("NSDate"),
            .integer(3), .integer(4),
        ])
        let decoded = try UserInfoCodec.decode(archive, allowed: .propertyList)
        #expect(decoded["title"] as? String == "Grüße")
        #expect(decoded["ids"] as? [Int] == [3, 4])
        #expect(decoded["blob"] as? Data == Data([1, 2, 3]))
        #expect(decoded["when"] as? Date == Date(timeIntervalSinceReferenceDate: 0))
        // And Foundation itself agrees on this layout.
        let foundation = try NSKeyedUnarchiver.unarchivedObject(
            ofClasses: [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self], from: Data(archive))
        #expect(foundation.map { same($0, decoded) } == true)
    }

    @Test("SecureArchive carries a secure-coding class of the user's own, and refuses it when not allowed")
    func customClass() throws {
        let archive = try SecureArchive.archivedData(withRootObject: ["p": TestPoint(x: 3, y: 4)])
        let allowed = try SecureArchive.unarchivedObject(ofClasses: [NSDictionary.self, NSString.self, TestPoint.self], from: archive)
        let point = try #require((allowed as? [AnyHashable: Any])?["p"] as? TestPoint)
        #expect(point.x == 3 && point.y == 4)
        #expect { try SecureArchive.unarchivedObject(ofClasses: [NSDictionary.self, NSString.self], from: archive) } throws: {
            ($0 as? WormholeError)?.code == .disallowedClass
        }
        #expect { try SecureArchive.archivedData(withRootObject: ["x": NSObject()]) } throws: {
            ($0 as? WormholeError)?.code == .unsupportedValue
        }
    }

    @Test("flipped, cut and spliced archives of both formats never crash the decoders (20,000 mutations)")
    func mutations() throws {
        var generator = SeededGenerator(seed: 11)
        let seeds: [[AnyHashable: Any]] = [
            ["key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1]],
            ["ids": [1, 2, 3], "flag": true, "when": Date(), "data": Data([1, 2, 3])],
            ["n": 1],
        ]
        // Each seed in both formats: the keyed archive, and the compact one a post sends.
        let archives = try seeds.flatMap {
            [try KeyedArchiveEncoder.encode($0, maximumSize: 1 << 20), try UserInfoCodec.encode($0, maximumSize: 1 << 20)]
        }
        #expect(archives.filter(CompactArchive.isCompact).count == seeds.count)
        var rejected = 0
        for round in 0..<20_000 {
            var bytes = archives[round % archives.count]
            // The last two mutations aim at a keyed archive's object table and trailer.
            switch Int.random(in: 0..<(CompactArchive.isCompact(bytes) ? 2 : 4), using: &generator) {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            case 1:
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            case 2:
                let index = Int.random(in: 8..<(bytes.count - 32), using: &generator)
                bytes[index] = [0xAF, 0xDF, 0x8F, 0x5F, 0x4F].randomElement(using: &generator) ?? 0
            default:
                // Point a trailer field somewhere else.
                let field = bytes.count - Int.random(in: 1...26, using: &generator)
                bytes[field] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                _ = try UserInfoCodec.decode(bytes, allowed: .propertyList)
            } catch {
                rejected += 1
            }
        }
        #expect(rejected > 5_000)
    }

    /// $objects: 0 null, 1 root dictionary, 2 its class, 3 "key", then what `value` says at 4...
    private func decode(_ tail: [CraftedArchive.Entry]) throws -> [AnyHashable: Any] {
        let entries: [CraftedArchive.Entry] = [
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([4]))]),
            .classEntry("NSDictionary"),
            .string("key"),
        ] + tail
        return try UserInfoCodec.decode(CraftedArchive.build(entries), allowed: .propertyList)
    }

    private func rejection(_ tail: [CraftedArchive.Entry]) -> String? {
        do {
            _ = try decode(tail)
            return nil
        } catch {
            return (error as? WormholeError)?.detail ?? "\(error)"
        }
    }

    @Test("a hand-built archive decodes, so the hostile variants below differ from it in one way each")
    func craftedBaseline() throws {
        let decoded = try decode([.object(class: 5, fields: [("NS.objects", .uids([6, 6]))]), .classEntry("NSArray"), .string("v")])
        #expect(decoded["key"] as? [String] == ["v", "v"])
    }

    @Test("hostile archives are refused with a reason")
    func hostileArchives() {
        let array = CraftedArchive.Entry.classEntry("NSArray")
        // An array that contains itself.
        #expect(rejection([.object(class: 5, fields: [("NS.objects", .uids([4]))]), array])?.contains("contains itself") == true)
        // A reference past the end of $objects.
        #expect(rejection([.object(class: 5, fields: [("NS.objects", .uids([999]))]), array])?.contains("outside") == true)
        // A class that is not allowed, and one that does not exist.
        #expect(rejection([.object(class: 5, fields: []), .classEntry("NSUUID")]) != nil)
        #expect(rejection([.object(class: 5, fields: []), .classEntry("NoSuchClass")])?.contains("not allowed") == true)
        // $class pointing at something that is not a class entry.
        #expect(rejection([.object(class: 3, fields: [])])?.contains("class entry") == true)
        // More keys than objects.
        #expect(rejection([
            .object(class: 2, fields: [("NS.keys", .uids([3, 3])), ("NS.objects", .uids([3]))]),
        ])?.contains("NS.keys") == true)
        // Wrong value types under NS.string, NS.time and NS.data.
        #expect(rejection([.object(class: 5, fields: [("NS.string", .integer(3))]), .classEntry("NSString")]) != nil)
        #expect(rejection([.object(class: 5, fields: [("NS.time", .string("now"))]), .classEntry("NSDate")]) != nil)
        #expect(rejection([.object(class: 5, fields: [("NS.data", .string("x"))]), .classEntry("NSData")]) != nil)
        // A $null element inside an array.
        #expect(rejection([.object(class: 5, fields: [("NS.objects", .uids([0]))]), array])?.contains("$null") == true)
    }

    @Test("nesting 100,000 deep is refused at the depth limit, without exhausting the stack")
    func deepNesting() {
        var entries: [CraftedArchive.Entry] = [.classEntry("NSArray")]  // index 4
        for level in 0..<100_000 {
            let next = level + 1 < 100_000 ? 6 + level : 3
            entries.append(.object(class: 4, fields: [("NS.objects", .uids([next]))]))
        }
        let archive = CraftedArchive.build(
            [.null, .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([5]))]), .classEntry("NSDictionary"),
             .string("key")] + entries)
        #expect {
            try UserInfoCodec.decode(archive, allowed: .propertyList)
        } throws: { ($0 as? WormholeError)?.detail.contains("deeper") == true }
    }

    @Test("a shared-reference bomb is refused instead of expanding")
    func expansionBomb() {
        // Level i is an array holding level i+1 ten times; eight levels share their way to 10^8 leaves.
        var entries: [CraftedArchive.Entry] = [.classEntry("NSArray")]  // index 4
        for level in 0..<8 {
            let next = level < 7 ? 6 + level : 3
            entries.append(.object(class: 4, fields: [("NS.objects", .uids(Array(repeating: next, count: 10)))]))
        }
        let archive = CraftedArchive.build(
            [.null, .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([5]))]), .classEntry("NSDictionary"),
             .string("key")] + entries)
        #expect(archive.count < 10_000)
        #expect {
            try UserInfoCodec.decode(archive, allowed: .propertyList)
        } throws: { ($0 as? WormholeError)?.detail.contains("expands") == true }
    }

    @Test("a userInfo nested deeper than receivers accept is refused by the poster")
    func posterRefusesDeepNesting() throws {
        var value: Any = "bottom"
        for _ in 0..<(Limits.archiveMaximumDepth + 1) { value = [value] }
        #expect { try UserInfoCodec.encode(["deep": value], maximumSize: 1 << 20) } throws: {
            ($0 as? WormholeError)?.code == .unsupportedValue
        }
    }

    @Test("CRC-32 matches zlib's check values, on every path through the sliced loop")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
        #expect(CRC32.checksum([UInt8]()) == 0)
        let long = Array("The quick brown fox jumps over the lazy dog".utf8)
        #expect(CRC32.checksum(long[1...]) == CRC32.checksum(Array(long[1...])))
    }

    @Test("frames survive random bytes and every truncation")
    func frames() throws {
        let frame = Frame(poster: 3, sequence: 4, name: "name", object: "object", userInfo: [1, 2, 3]).encoded()
        let decoded = try Frame(decoding: frame)
        #expect(decoded.name == "name" && decoded.object == "object" && decoded.userInfo?.array == [1, 2, 3])
        for length in 0..<frame.count {
            #expect(throws: WormholeError.self) { try Frame(decoding: Array(frame.prefix(length))) }
        }
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<5_000 {
            var bytes = frame
            bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            _ = try? Frame(decoding: bytes)
        }
    }

    @Test("strings made from another process's bytes are exactly what validating decoding gives")
    func utf8Text() {
        let ascii15 = Array("abcdefghijklmno".utf8), ascii16 = Array("abcdefghijklmnop".utf8)
        let cases: [[UInt8]] = [
            [], ascii15, ascii16, Array("héllo ✓".utf8), Array("e\u{301}".utf8), [0xEF, 0xBF, 0xBD], [0xEF, 0xBB, 0xBF, 0x61], [0],
            // Overlong, a surrogate, past U+10FFFF, never a lead byte, a lone continuation, cut short.
            [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5], [0x80], [0xE2, 0x82],
            // An invalid last byte where a string held in place ends, and one past it.
            Array(ascii15.dropLast()) + [0xFF], Array(ascii16.dropLast()) + [0xFF], Array(ascii15.dropLast(2)) + [0xE2, 0x82],
        ]
        for bytes in cases {
            let made = bytes.withUnsafeBytes { UTF8Text.string($0) }
            #expect(made == String(validating: bytes, as: UTF8.self), "\(bytes)")
            #expect(made.map { Array($0.utf8) } ?? bytes == bytes, "kept as written: \(bytes)")
        }
    }

    @Test("a receive thread's names, found again by their bytes, are exactly what decoding gives")
    func decodedNames() throws {
        var names = DecodedNames()
        func decode(_ name: String) throws -> String {
            try Frame(decoding: Frame(poster: 1, sequence: 1, name: name, object: nil, userInfo: nil).encoded(), names: &names).name
        }
        /// Where a string's bytes are: the same for two strings that share their storage.
        func storage(_ string: String) -> UInt? {
            string.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? nil
        }
        let long = "com.example.cart.changed"
        let first = try decode(long)
        let again = try decode(long)
        #expect(first == long && again == long)
        #expect(storage(first) != nil && storage(first) == storage(again), "found again, not decoded again")
        // One byte apart, of the same length: in the first word compared and in the last. Then longer and shorter.
        for variant in ["Com.example.cart.changed", "com.example.cart.change_", "com.example.cart.changed.", "com.example.cart.change"] {
            #expect(try decode(variant) == variant)
            #expect(try decode(long) == long)
        }
        // Of 25 bytes, a word and a byte past three words: one byte apart in the byte after the words.
        #expect(try decode("com.example.cart.changed1") == "com.example.cart.changed1")
        #expect(try decode("com.example.cart.changed2") == "com.example.cart.changed2")
        #expect(try decode("com.example.cart.changed1") == "com.example.cart.changed1")
        // As many other names push it out: decoded anew.
        for index in 0..<DecodedNames.capacity { #expect(try decode("com.example.other.\(index)") == "com.example.other.\(index)") }
        let later = try decode(long)
        #expect(later == long && storage(later) != storage(first))
        // Names a string holds in place are decoded each time, and bytes that are not UTF-8 are refused.
        #expect(try decode("ping") == "ping" && decode("ping") == "ping")
        var invalid = Frame(poster: 1, sequence: 1, name: long, object: nil, userInfo: nil).encoded()
        let at = try #require(invalid.firstIndex(of: UInt8(ascii: "x")))
        invalid[at] = 0xFF
        #expect(throws: WormholeError.self) { try Frame(decoding: invalid, names: &names) }
        #expect(try decode(long) == long)
    }
}
