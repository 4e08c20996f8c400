import Foundation

/// Builds keyed archives by hand, object by object, as a hostile sender would: any reference may point
/// anywhere, counts may disagree, class names may lie.
struct CraftedArchive {
    /// A field of an archived object.
    enum Field {
        case uid(Int)
        case uids([Int])
        case string(String)
        case real(Double)
        case integer(Int)
        case data([UInt8])
    }

    /// One entry of `$objects`.
    enum Entry {
        case null
        case string(String)
        case integer(Int)
        case real(Double)
        case classEntry(String)
        case object(class: Int, fields: [(String, Field)])
    }

    private enum Node {
        case string(String)
        case integer(Int)
        case real(Double)
        case data([UInt8])
        case uid(Int)
        case array([Int])
        case dictionary([(Int, Int)])
    }

    private var nodes: [Node] = []

    /// The archive bytes of `entries` with `$top.root` pointing at `root`.
    static func build(_ entries: [Entry], root: Int = 1) -> [UInt8] {
        var builder = CraftedArchive()
        return builder.archive(entries, root: root)
    }

    private mutating func add(_ node: Node) -> Int {
        nodes.append(node)
        return nodes.count - 1
    }

    private mutating func archive(_ entries: [Entry], root: Int) -> [UInt8] {
        let top = add(.dictionary([]))
        var objectRefs: [Int] = []
        for entry in entries {
            switch entry {
            case .null: objectRefs.append(add(.string("$null")))
            case .string(let string): objectRefs.append(add(.string(string)))
            case .integer(let value): objectRefs.append(add(.integer(value)))
            case .real(let value): objectRefs.append(add(.real(value)))
            case .classEntry(let name):
                let key1 = add(.string("$classname")), value1 = add(.string(name))
                let key2 = add(.string("$classes")), names = add(.string(name)), object = add(.string("NSObject"))
                let value2 = add(.array([names, object]))
                objectRefs.append(add(.dictionary([(key1, value1), (key2, value2)])))
            case .object(let classUID, let fields):
                var pairs = [(add(.string("$class")), add(.uid(classUID)))]
                for (name, field) in fields {
                    let key = add(.string(name))
                    let value: Int
                    switch field {
                    case .uid(let uid): value = add(.uid(uid))
                    case .uids(let uids): value = add(.array(uids.map { add(.uid($0)) }))
                    case .string(let string): value = add(.string(string))
                    case .real(let number): value = add(.real(number))
                    case .integer(let number): value = add(.integer(number))
                    case .data(let bytes): value = add(.data(bytes))
                    }
                    pairs.append((key, value))
                }
                objectRefs.append(add(.dictionary(pairs)))
            }
        }
        let archiverKey = add(.string("$archiver")), archiver = add(.string("NSKeyedArchiver"))
        let versionKey = add(.string("$version")), version = add(.integer(100_000))
        let topKey = add(.string("$top")), rootKey = add(.string("root")), rootUID = add(.uid(root))
        let topDictionary = add(.dictionary([(rootKey, rootUID)]))
        let objectsKey = add(.string("$objects")), objects = add(.array(objectRefs))
        nodes[top] = .dictionary([(archiverKey, archiver), (versionKey, version), (topKey, topDictionary), (objectsKey, objects)])
        return write()
    }

    /// Binary property list with 4-byte references and offsets.
    private func write() -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        func count(_ marker: UInt8, _ n: Int) {
            if n < 15 {
                bytes.append(marker | UInt8(n))
            } else {
                bytes.append(marker | 0x0F)
                bytes.append(0x12)
                bytes += withUnsafeBytes(of: UInt32(n).bigEndian, Array.init)
            }
        }
        func reference(_ index: Int) { bytes += withUnsafeBytes(of: UInt32(index).bigEndian, Array.init) }
        for node in nodes {
            offsets.append(bytes.count)
            switch node {
            case .string(let string):
                let utf16 = Array(string.utf16)
                if string.utf8.allSatisfy({ $0 < 0x80 }) {
                    count(0x50, string.utf8.count)
                    bytes += string.utf8
                } else {
                    count(0x60, utf16.count)
                    for unit in utf16 { bytes += withUnsafeBytes(of: unit.bigEndian, Array.init) }
                }
            case .integer(let value):
                bytes.append(0x13)
                bytes += withUnsafeBytes(of: Int64(value).bigEndian, Array.init)
            case .real(let value):
                bytes.append(0x23)
                bytes += withUnsafeBytes(of: value.bitPattern.bigEndian, Array.init)
            case .data(let data):
                count(0x40, data.count)
                bytes += data
            case .uid(let value):
                bytes.append(0x83)
                bytes += withUnsafeBytes(of: UInt32(value).bigEndian, Array.init)
            case .array(let items):
                count(0xA0, items.count)
                items.forEach(reference)
            case .dictionary(let pairs):
                count(0xD0, pairs.count)
                pairs.forEach { reference($0.0) }
                pairs.forEach { reference($0.1) }
            }
        }
        let table = bytes.count
        for offset in offsets { bytes += withUnsafeBytes(of: UInt32(offset).bigEndian, Array.init) }
        bytes += [0, 0, 0, 0, 0, 0, 4, 4]
        bytes += withUnsafeBytes(of: UInt64(nodes.count).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        return bytes
    }
}
