// Also compiled into the fuzz target (Benchmarks/Fuzz/run-fuzzer.sh), which links the engine alone.
import Foundation
@testable import WormholeEngine

/// Mutates a keyed archive as structure, not bytes: its binary property list's objects (`$objects` entries,
/// `$class` entries, UIDs, keys, counts) are read into a list, changed the way a hostile sender would change
/// them, and written back. What cannot be read as a property list is left to byte mutation.
struct ArchiveMutator {
    private var objects: [BinaryPropertyListWriter.Object] = []
    private var top = 0

    /// Words an archive is made of, and class names, to put where strings are.
    static let words = [
        "$null", "$class", "$classname", "$classes", "$objects", "$top", "root", "$archiver", "NSKeyedArchiver",
        "NS.keys", "NS.objects", "NS.string", "NS.data", "NS.time", "NS.base", "NS.relative", "NS.uuidbytes",
        "NSDictionary", "NSMutableDictionary", "NSArray", "NSMutableArray", "NSSet", "NSString", "NSNumber",
        "NSValue", "NSData", "NSDate", "NSNull", "NSURL", "NSUUID", "NSObject", "NSKeyedArchiver",
        NSStringFromClass(FuzzNode.self), "name", "value", "real", "flag", "blob", "children", "map", "peer", "extra",
        "https://example.org/", "", "\u{1B}[2J", String(repeating: "x", count: 300),
    ]

    init?(_ bytes: [UInt8]) {
        guard let plist = try? BinaryPropertyList(bytes) else { return nil }
        top = plist.topObject
        objects.reserveCapacity(plist.objectCount)
        for index in 0..<plist.objectCount {
            guard let object = try? plist.object(index) else { return nil }
            switch object {
            case .null: objects.append(.bool(false))
            case .bool(let flag): objects.append(.bool(flag))
            case .integer(let value): objects.append(.integer(value))
            case .unsignedInteger(let value): objects.append(.unsignedInteger(value))
            case .real(let value), .date(let value): objects.append(.real(value))
            case .data(let bytes): objects.append(.data(Data(bytes)))
            case .string(let string): objects.append(.string(string))
            case .uid(let value): objects.append(.uid(Int(truncatingIfNeeded: value & 0xFFFF_FFFF)))
            case .array(let items), .set(let items): objects.append(.array(Array(items)))
            case .dictionary(let keys, let values): objects.append(.dictionary(keys: Array(keys), values: Array(values)))
            }
        }
    }

    /// The archive as it now stands.
    var bytes: [UInt8] {
        var writer = BinaryPropertyListWriter(capacity: objects.count)
        for object in objects { _ = writer.add(object) }
        return writer.bytes(top: top)
    }

    /// Applies one to three structural changes.
    mutating func mutate(using generator: inout some RandomNumberGenerator) {
        for _ in 0..<Int.random(in: 1...3, using: &generator) { mutateOnce(using: &generator) }
    }

    private func indexes(where matches: (BinaryPropertyListWriter.Object) -> Bool) -> [Int] {
        objects.indices.filter { matches(objects[$0]) }
    }

    private mutating func mutateOnce(using generator: inout some RandomNumberGenerator) {
        guard !objects.isEmpty else { return }
        let count = objects.count
        func anyIndex() -> Int { Int.random(in: 0..<count, using: &generator) }
        switch Int.random(in: 0..<10, using: &generator) {
        case 0:  // Point a UID somewhere else: null, another object, past the end.
            guard let target = indexes(where: { if case .uid = $0 { true } else { false } }).randomElement(using: &generator) else { return }
            let choices = [0, 1, anyIndex(), anyIndex(), count + 5, Int(UInt32.max)]
            objects[target] = .uid(choices.randomElement(using: &generator) ?? 0)
        case 1:  // A string becomes an archive word or class name.
            guard let target = indexes(where: { if case .string = $0 { true } else { false } }).randomElement(using: &generator) else { return }
            objects[target] = .string(Self.words.randomElement(using: &generator) ?? "")
        case 2:  // A number becomes an edge case, or a double that hashes like the others.
            guard let target = indexes(where: {
                switch $0 {
                case .integer, .real, .bool, .unsignedInteger: true
                default: false
                }
            }).randomElement(using: &generator) else { return }
            let reals: [BinaryPropertyListWriter.Object] = [
                .integer(0), .integer(-1), .integer(.max), .integer(.min), .integer(Int64(Int32.max) + 1), .unsignedInteger(.max),
                .real(.nan), .real(.infinity), .real(1e308), .real(Double(Int.random(in: 1...1000, using: &generator)) * 0x1p64),
                .bool(true),
            ]
            objects[target] = reals.randomElement(using: &generator) ?? .integer(0)
        case 3:  // Drop, repeat or add an element of an array: NS.keys and NS.objects no longer agree.
            guard let target = indexes(where: { if case .array = $0 { true } else { false } }).randomElement(using: &generator),
                case .array(var items) = objects[target]
            else { return }
            switch Int.random(in: 0..<4, using: &generator) {
            case 0 where !items.isEmpty: items.remove(at: Int.random(in: 0..<items.count, using: &generator))
            case 1 where !items.isEmpty: items.append(items[Int.random(in: 0..<items.count, using: &generator)])
            case 2 where !items.isEmpty:
                // Many references to one element: the shape of an expansion bomb.
                let item = items[Int.random(in: 0..<items.count, using: &generator)]
                items += repeatElement(item, count: Int.random(in: 1...300, using: &generator))
            default: items.append(anyIndex())
            }
            objects[target] = .array(items)
        case 4:  // Drop a field of an object, or give it a field of another's.
            guard let target = indexes(where: { if case .dictionary = $0 { true } else { false } }).randomElement(using: &generator),
                case .dictionary(var keys, var values) = objects[target], !keys.isEmpty
            else { return }
            let position = Int.random(in: 0..<keys.count, using: &generator)
            if Bool.random(using: &generator) {
                keys.remove(at: position)
                values.remove(at: position)
            } else {
                values[position] = anyIndex()
            }
            objects[target] = .dictionary(keys: keys, values: values)
        case 5:  // A new class entry, and some $class pointing at it.
            let name = objects.count
            objects.append(.string(Self.words.randomElement(using: &generator) ?? "NSObject"))
            objects.append(.string("NSObject"))
            objects.append(.array([name, name + 1]))
            objects.append(.string("$classname"))
            objects.append(.string("$classes"))
            objects.append(.dictionary(keys: [name + 3, name + 4], values: [name, name + 2]))
            objects.append(.uid(Int.random(in: 0..<max(1, count), using: &generator)))
            if let target = indexes(where: { if case .uid = $0 { true } else { false } }).randomElement(using: &generator) {
                objects[target] = .uid(name + 5)
            }
        case 6:  // Swap two objects.
            let first = anyIndex(), second = anyIndex()
            objects.swapAt(first, second)
        case 7:  // An object of one kind becomes one of another.
            let target = anyIndex()
            let kinds: [BinaryPropertyListWriter.Object] = [
                .uid(anyIndex()), .array([anyIndex()]), .dictionary(keys: [anyIndex()], values: [anyIndex()]), .string("$null"),
                .data(Data(count: Int.random(in: 0...20, using: &generator))), .integer(3),
            ]
            objects[target] = kinds.randomElement(using: &generator) ?? .integer(0)
        case 8:  // Copy one object over another.
            objects[anyIndex()] = objects[anyIndex()]
        default:  // Append a copy of an object and refer to it from an array.
            objects.append(objects[anyIndex()])
            if let target = indexes(where: { if case .array = $0 { true } else { false } }).randomElement(using: &generator),
                case .array(var items) = objects[target]
            {
                items.append(objects.count - 1)
                objects[target] = .array(items)
            }
        }
    }
}
