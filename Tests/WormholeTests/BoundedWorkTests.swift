import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

/// Archives shaped to make a receiver work or grow without bound: each is decoded or refused, with work in
/// proportion to its size. The tests print how long each shape took at two sizes (a report, not a threshold).
@Suite("Codec: bounded work and memory per archive, whatever its shape", .throttled)
struct BoundedWorkTests {
    private let classes = AllowedClasses(FuzzNode.allowedClasses)

    /// `$objects`: 0 null, 1 the root dictionary {"key": 4}, 2 its class, 3 "key", then `tail` from 4.
    private func archive(_ tail: [CraftedArchive.Entry]) -> [UInt8] {
        CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([4]))]),
            .classEntry("NSDictionary"),
            .string("key"),
        ] + tail)
    }

    /// Decodes `bytes`; returns the error's detail, or nil when it decoded, and prints how long it took.
    private func outcome(_ label: String, _ bytes: [UInt8]) -> String? {
        let start = ContinuousClock.now
        defer { print("\(label): \(bytes.count) bytes in \(ContinuousClock.now - start)") }
        do {
            _ = try UserInfoCodec.decode(bytes, allowed: classes)
            return nil
        } catch {
            return error.detail
        }
    }

    /// A dictionary (at 4) of `count` number keys, each a double, all holding one string.
    private func numberKeys(_ count: Int, colliding: Bool) -> [UInt8] {
        let keys = (0..<count).map { 6 + $0 }
        let entries: [CraftedArchive.Entry] = [
            .object(class: 2, fields: [("NS.keys", .uids(keys)), ("NS.objects", .uids(Array(repeating: 5, count: count)))]),
            .string("v"),
        ] + (0..<count).map { .real(colliding ? Double($0 + 1) * 0x1p64 : Double($0) + 0.5) }
        return archive(entries)
    }

    @Test("number keys chosen to share a hash are refused; as many spread-out keys decode")
    func collidingKeys() {
        for count in [2_000, 4_000] {
            #expect(outcome("\(count) colliding number keys", numberKeys(count, colliding: true))?.contains("one hash") == true)
            #expect(outcome("\(count) distinct number keys", numberKeys(count, colliding: false)) == nil)
        }
    }

    @Test("set members chosen to share a hash are refused")
    func collidingSetMembers() {
        for count in [2_000, 4_000] {
            let members = (0..<count).map { 6 + $0 }
            let bytes = archive([
                .object(class: 5, fields: [("NS.objects", .uids(members))]), .classEntry("NSSet"),
            ] + (0..<count).map { .real(Double($0 + 1) * 0x1p64) })
            #expect(outcome("\(count) colliding set members", bytes)?.contains("one hash") == true)
        }
    }

    @Test("a set of nulls decodes to one null; a set of objects of the user's own is refused both ways")
    func setsOfObjects() throws {
        // Two NSNull instances are equal but hash apart: a set of several once trapped its receiver.
        let nulls = archive([
            .object(class: 5, fields: [("NS.objects", .uids(Array(6..<16)))]), .classEntry("NSSet"),
        ] + (6..<16).map { _ in .object(class: 16, fields: []) } + [.classEntry("NSNull")])
        let decoded = try UserInfoCodec.decode(nulls, allowed: classes)
        #expect((decoded["key"] as? Set<AnyHashable>)?.count == 1)
        #expect { try UserInfoCodec.encode(["s": Set<AnyHashable>([FuzzNode(), FuzzNode()])], maximumSize: 1 << 20) } throws: {
            ($0 as? WormholeError)?.detail.contains("values only") == true
        }
        let node = CraftedArchive.build([
            .null,
            .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([4]))]), .classEntry("NSDictionary"), .string("key"),
            .object(class: 5, fields: [("NS.objects", .uids([6]))]), .classEntry("NSSet"),
            .object(class: 7, fields: [("name", .uid(3))]), .classEntry(NSStringFromClass(FuzzNode.self)),
        ])
        #expect { try UserInfoCodec.decode(node, allowed: classes) } throws: {
            ($0 as? WormholeError)?.detail.contains("values only") == true
        }
    }

    @Test("many class entries are each resolved once, in constant time per object")
    func manyClassEntries() throws {
        for count in [30_000, 60_000] {
            // An array (at 4) of `count` empty arrays, each with a class entry of its own.
            var entries: [CraftedArchive.Entry] = [.object(class: 5, fields: [("NS.objects", .uids((0..<count).map { 6 + 2 * $0 }))])]
            entries.append(.classEntry("NSArray"))
            for index in 0..<count {
                entries.append(.object(class: 7 + 2 * index, fields: [("NS.objects", .uids([]))]))
                entries.append(.classEntry("NSArray"))
            }
            let bytes = archive(entries)
            #expect(outcome("\(count) class entries", bytes) == nil)
            let decoded = try UserInfoCodec.decode(bytes, allowed: classes)
            #expect((decoded["key"] as? [Any])?.count == count)
        }
    }

    /// Levels of arrays, each holding the level below `fanOut` times, over one string of `size` bytes.
    private func sharedString(size: Int, fanOut: Int, levels: Int) -> [UInt8] {
        var entries: [CraftedArchive.Entry] = [.classEntry("NSArray")]  // 4
        for level in 0..<levels {
            let below = level + 1 < levels ? 6 + level : 5 + levels
            entries.append(.object(class: 4, fields: [("NS.objects", .uids(Array(repeating: below, count: fanOut)))]))
        }
        entries.append(.string(String(repeating: "s", count: size)))
        return CraftedArchive.build([
            .null, .object(class: 2, fields: [("NS.keys", .uids([3])), ("NS.objects", .uids([5]))]), .classEntry("NSDictionary"),
            .string("key"),
        ] + entries)
    }

    @Test("a small archive of references to one large string is refused by its expanded size in bytes")
    func swell() {
        // About 4 million references to one 100 KB string, in an archive of about 100 KB.
        for fanOut in [40, 45] {
            let bytes = sharedString(size: 100_000, fanOut: fanOut, levels: 4)
            #expect(bytes.count < 110_000)
            #expect(outcome("\(fanOut)^4 references to a 100 KB string", bytes)?.contains("bytes") == true)
        }
        // Sharing within reason decodes: 1,000 uses of one 200-byte string.
        #expect(outcome("1,000 references to a 200-byte string", sharedString(size: 200, fanOut: 1_000, levels: 1)) == nil)
    }

    /// An array of `count` archived arrays that are all one property-list object, each holding `count`
    /// references: small as bytes, `count`² references to read if each archived object parsed it again.
    private func sharedPropertyListObjects(_ count: Int) -> [UInt8] {
        var writer = BinaryPropertyListWriter()
        let null = writer.add(.string("$null")), classKey = writer.add(.string("$class")), objectsKey = writer.add(.string("NS.objects"))
        let name = writer.add(.string("NSArray")), nsObject = writer.add(.string("NSObject"))
        let classEntry = writer.add(.dictionary(
            keys: [writer.add(.string("$classes")), writer.add(.string("$classname"))], values: [writer.add(.array([name, nsObject])), name]))
        let leafUID = count + 3
        let leaves = writer.add(.array(Array(repeating: writer.add(.uid(leafUID)), count: count)))
        let shared = writer.add(.dictionary(keys: [classKey, objectsKey], values: [writer.add(.uid(2)), leaves]))
        let members = writer.add(.array((0..<count).map { writer.add(.uid(3 + $0)) }))
        let root = writer.add(.dictionary(keys: [classKey, objectsKey], values: [writer.add(.uid(2)), members]))
        let list = writer.add(.array([null, root, classEntry] + Array(repeating: shared, count: count) + [writer.add(.string("x"))]))
        let top = writer.add(.dictionary(keys: [writer.add(.string("root"))], values: [writer.add(.uid(1))]))
        let document = writer.add(.dictionary(
            keys: [writer.add(.string("$archiver")), writer.add(.string("$objects")), writer.add(.string("$top"))],
            values: [writer.add(.string("NSKeyedArchiver")), list, top]))
        return writer.bytes(top: document)
    }

    @Test("archived objects sharing one property-list object cost their archive's size in work, not its square")
    func sharedObjects() {
        for count in [1_000, 2_000] {
            let bytes = sharedPropertyListObjects(count)
            let start = ContinuousClock.now
            #expect(throws: WormholeError.self) { try KeyedArchiveDecoder.decodeRoot(bytes, allowed: classes) }
            print("\(count) objects sharing one property-list array of \(count): \(bytes.count) bytes in \(ContinuousClock.now - start)")
        }
        // Sharing a few times is fine: 20 arrays of 20.
        #expect((try? KeyedArchiveDecoder.decodeRoot(sharedPropertyListObjects(20), allowed: classes) as? [Any])?.count == 20)
    }

    @Test("the expansion limit grows with the archive, from 256 KiB to at most 64 MiB")
    func expansionLimit() {
        #expect(KeyedArchiveDecoder.expansionLimit(archiveSize: 0) == 256 << 10)
        #expect(KeyedArchiveDecoder.expansionLimit(archiveSize: 1 << 20) == (8 << 20) + (256 << 10))
        #expect(KeyedArchiveDecoder.expansionLimit(archiveSize: 16 << 20) == Limits.archiveMaximumExpandedBytes)
    }

    @Test("the keyed archive's writer refuses what receivers would refuse for its expansion, and receivers accept the rest")
    func posterCountsExpansion() throws {
        let text = String(repeating: "x", count: 10_000)
        let point = FuzzNode.sample(1)
        #expect { try KeyedArchiveEncoder.encode(["list": Array(repeating: text, count: 200)] as [AnyHashable: Any], maximumSize: 1 << 24) } throws: {
            let error = $0 as? WormholeError
            return error?.code == .unsupportedValue && error?.detail.contains("receivers accept") == true
        }
        // Just under: what the poster accepts, receivers decode, also with a shared object of the user's own.
        for count in [1, 10, 25] {
            let userInfo: [AnyHashable: Any] = ["list": Array(repeating: text, count: count), "nodes": Array(repeating: point, count: count)]
            let archive = try UserInfoCodec.encode(userInfo, maximumSize: 1 << 24)
            #expect((try UserInfoCodec.decode(archive, allowed: classes)["list"] as? [String])?.count == count)
        }
    }

    @Test("a 16 MiB userInfo, the largest a poster sends, still decodes")
    func largestPayload() throws {
        let blob = Data(repeating: 7, count: GroupNotificationCenter.maximumPayloadSize - 1_024)
        let bytes = try UserInfoCodec.encode(["blob": blob, "again": [blob.count]], maximumSize: GroupNotificationCenter.maximumPayloadSize)
        #expect(try UserInfoCodec.decode(bytes, allowed: classes)["blob"] as? Data == blob)
    }
}
