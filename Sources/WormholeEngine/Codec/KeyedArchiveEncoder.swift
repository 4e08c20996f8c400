import Foundation

/// Writes the keyed-archive format of `NSKeyedArchiver`, without Foundation's archiver.
///
/// The archive is the one Foundation writes: a binary property list whose top dictionary holds `$archiver`
/// (`NSKeyedArchiver`), `$version` (100000), `$top` (`root` → UID) and `$objects`, with `$null` at index 0.
/// Strings, numbers, booleans and data sit inline in `$objects`; dates, arrays, dictionaries, sets, URLs and
/// UUIDs are objects with a `$class` (`NSDate` with `NS.time`, `NSArray` and `NSSet` with `NS.objects`,
/// `NSDictionary` with `NS.keys` and `NS.objects`, `NSURL` with `NS.base` and `NS.relative`, `NSUUID` with
/// `NS.uuidbytes`), and `NSNull` has no fields. Equal strings are written once and shared by UID.
///
/// An `NSSecureCoding` object of the user's own is written through its `encode(with:)` into a
/// ``KeyedObjectEncoder``: an object whose `$class` names its class and its superclasses up to `NSObject`
/// (`$classname`, `$classes`), its numbers, booleans and bytes inline and its objects by UID. One instance
/// referenced twice is written once. Other Foundation classes are refused: they would need Foundation's
/// archiver, which writes nothing at all in a statically linked program.
struct KeyedArchiveEncoder {

    private var writer = BinaryPropertyListWriter()
    /// `$objects`, as writer indexes.
    private var objects: [Int] = []
    private var uids: [Int] = []
    /// Strings written so far, so that each is written once: a short list searched in order while small (a
    /// hash costs more than a few comparisons), a dictionary once it grows.
    private var recentStrings: [(String, Int)] = []
    private var sharedStrings: [String: Int] = [:]
    private let maximumSize: Int
    private var bytesLeft: Int
    private var depthLeft = Limits.archiveMaximumDepth

    /// The archive of `root`.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming, from `path`, where a value is neither a
    ///   property-list value, one of the Foundation classes written here, nor `NSSecureCoding` of the user's
    ///   own, where an object contains itself or could not be encoded, or where values nest deeper than
    ///   receivers decode; ``WormholeError/Code/payloadTooLarge`` once the strings and data seen pass
    ///   `maximumSize`.
    static func encode(_ root: Any, path: String = "root", maximumSize: Int) throws(WormholeError) -> [UInt8] {
        var encoder = KeyedArchiveEncoder(maximumSize: maximumSize)
        return try encoder.archive(root, path: path)
    }

    /// The strings every archive holds, at these writer indexes.
    private enum Constant: Int, CaseIterable {
        case null, classKey, keys, objects, time, classname, classes, nsObject
        case archiverKey, archiver, versionKey, topKey, root, objectsKey

        var text: String {
            switch self {
            case .null: "$null"
            case .classKey: "$class"
            case .keys: "NS.keys"
            case .objects: "NS.objects"
            case .time: "NS.time"
            case .classname: "$classname"
            case .classes: "$classes"
            case .nsObject: "NSObject"
            case .archiverKey: "$archiver"
            case .archiver: "NSKeyedArchiver"
            case .versionKey: "$version"
            case .topKey: "$top"
            case .root: "root"
            case .objectsKey: "$objects"
            }
        }
    }

    /// The classes this encoder writes objects of, with their UID once written.
    private enum KnownClass: Int {
        case date, array, dictionary, null, set, url, uuid
        var name: String { ["NSDate", "NSArray", "NSDictionary", "NSNull", "NSSet", "NSURL", "NSUUID"][rawValue] }
    }

    private var classUIDs: [Int] = [-1, -1, -1, -1, -1, -1, -1]
    /// Class entries of the user's own classes, by class.
    private var userClassUIDs: [ObjectIdentifier: Int] = [:]
    /// Objects of the user's own written so far, by identity, kept alive so that no identity is reused, and
    /// those being written now, to refuse an object that contains itself.
    private var userObjectUIDs: [ObjectIdentifier: Int] = [:]
    private var userObjectsKept: [AnyObject] = []
    private var userObjectsOpen: Set<ObjectIdentifier> = []
    private var userObjectWeights: [ObjectIdentifier: (elements: Int, bytes: Int)] = [:]
    /// What a receiver will count when it expands the archive (see ``KeyedArchiveDecoder``): every use of a
    /// shared string or object counted again.
    private var expandedElements = 0
    private var expandedBytes = 0

    private init(maximumSize: Int) {
        self.maximumSize = maximumSize
        bytesLeft = maximumSize
        for constant in Constant.allCases { _ = writer.add(.string(constant.text)) }
        objects.reserveCapacity(16)
        objects.append(Constant.null.rawValue)
    }

    private mutating func archive(_ root: Any, path: String) throws(WormholeError) -> [UInt8] {
        let rootUID = try encode(root, path: path)
        let version = writer.add(.integer(100_000))
        let top = writer.add(.dictionary(keys: [Constant.root.rawValue], values: [uidReference(rootUID)]))
        let list = writer.add(.array(objects))
        let document = writer.add(
            .dictionary(
                keys: [Constant.archiverKey.rawValue, Constant.objectsKey.rawValue, Constant.topKey.rawValue, Constant.versionKey.rawValue],
                values: [Constant.archiver.rawValue, list, top, version]))
        let bytes = writer.bytes(top: document)
        // Receivers refuse what expands past these; the sender learns it here, with the reason.
        let limit = KeyedArchiveDecoder.expansionLimit(archiveSize: bytes.count)
        guard expandedBytes <= limit, expandedElements <= Limits.archiveMaximumElements else {
            throw WormholeError(
                .unsupportedValue,
                "\(path) expands into \(expandedElements) elements and \(expandedBytes) bytes, counting each use of a shared "
                    + "value; receivers accept \(Limits.archiveMaximumElements) elements and \(limit) bytes for this archive")
        }
        return bytes
    }

    /// Archives `value` and returns its UID (its index in `$objects`).
    private mutating func encode(_ value: Any, path: @autoclosure () -> String) throws(WormholeError) -> Int {
        // What a receiver counts for this value: one element of 8 bytes, plus its strings' and data's bytes.
        expandedElements &+= 1
        expandedBytes &+= 8
        // The common concrete types first, taken without a dynamic cast: a cast costs more than this comparison.
        let type = ObjectIdentifier(Swift.type(of: value))
        if type == ValueType.string, let string = ValueType.exactly(value, String.self) { return try shared(string) }
        if type == ValueType.int, let integer = ValueType.exactly(value, Int.self) { return number(.integer(Int64(integer))) }
        if type == ValueType.double, let real = ValueType.exactly(value, Double.self) { return number(.real(real)) }
        if type == ValueType.bool, let flag = ValueType.exactly(value, Bool.self) { return number(.bool(flag)) }
        if type == ValueType.stringDictionary, let dictionary = ValueType.exactly(value, [String: Any].self) {
            return try encodeDictionary(dictionary.lazy.map { (AnyHashable($0.key), $0.value) }, count: dictionary.count, path: path())
        }
        if type == ValueType.dictionary, let dictionary = ValueType.exactly(value, [AnyHashable: Any].self) {
            return try encodeDictionary(dictionary.lazy.map { ($0.key, $0.value) }, count: dictionary.count, path: path())
        }
        if type == ValueType.array, let array = ValueType.exactly(value, [Any].self) { return try encodeArray(array, path: path()) }
        if type == ValueType.number, let number = ValueType.exactly(value, NSNumber.self) { return encodeNumber(number) }
        if type == ValueType.date, let date = ValueType.exactly(value, Date.self) { return encodeDate(date) }
        if type == ValueType.url, let url = ValueType.exactly(value, URL.self) { return try encodeURL(url, path: path()) }
        if type == ValueType.uuid, let uuid = ValueType.exactly(value, UUID.self) { return encodeUUID(uuid) }
        // Any other Swift array, dictionary or set, found without a cast that bridges it (SwiftCollection).
        if let collection = value as? any SwiftCollection {
            let (keys, values) = collection.collected
            switch Swift.type(of: collection).shape {
            case .array: return try encodeArray(values, path: path())
            case .dictionary: return try encodeDictionary(zip(keys, values), count: values.count, path: path())
            case .set: return try encodeSet(values, count: values.count, path: path())
            }
        }
        switch value {
        case let string as String:
            return try shared(string)
        case let flag as Bool where Swift.type(of: value) == Bool.self:
            return number(.bool(flag))
        // Before NSNumber: a cast of Data to a class bridges it, copying every byte.
        case let data as Data:
            try spend(data.count)
            expandedBytes &+= data.count
            return append(writer.add(.data(data)))
        case let number as NSNumber:
            return encodeNumber(number)
        case let integer as Int:
            return number(.integer(Int64(integer)))
        case let real as Double:
            return number(.real(real))
        case let date as Date:
            return encodeDate(date)
        case let array as [Any]:
            return try encodeArray(array, path: path())
        case let dictionary as [AnyHashable: Any]:
            return try encodeDictionary(dictionary.lazy.map { ($0.key, $0.value) }, count: dictionary.count, path: path())
        case is NSNull:
            return object(.null, fields: [])
        case let integer as Int64:
            return number(.integer(integer))
        case let integer as Int32:
            return number(.integer(Int64(integer)))
        case let integer as Int16:
            return number(.integer(Int64(integer)))
        case let integer as Int8:
            return number(.integer(Int64(integer)))
        case let integer as UInt:
            return encodeUnsigned(UInt64(integer))
        case let integer as UInt64:
            return encodeUnsigned(integer)
        case let integer as UInt32:
            return number(.integer(Int64(integer)))
        case let integer as UInt16:
            return number(.integer(Int64(integer)))
        case let integer as UInt8:
            return number(.integer(Int64(integer)))
        case let real as Float:
            return number(.real(Double(real)))
        case let url as URL:
            return try encodeURL(url, path: path())
        case let uuid as UUID:
            return encodeUUID(uuid)
        case let set as Set<AnyHashable>:
            return try encodeSet(set.lazy.map { $0.base }, count: set.count, path: path())
        case let set as NSSet:
            return try encodeSet(set.lazy.map { $0 }, count: set.count, path: path())
        case let object as NSObject:
            return try encodeUserObject(object, path: path())
        default:
            throw unsupported(value, path())
        }
    }

    private func unsupported(_ value: Any, _ path: String) -> WormholeError {
        WormholeError(.unsupportedValue, "\(path) is a \(type(of: value)), neither a property-list value nor NSSecureCoding")
    }

    private mutating func encodeArray(_ array: [Any], path: @autoclosure () -> String) throws(WormholeError) -> Int {
        try descend(path())
        defer { depthLeft += 1 }
        var items: [Int] = []
        items.reserveCapacity(array.count)
        for (index, item) in array.enumerated() {
            items.append(uidReference(try encode(item, path: "\(path())[\(index)]")))
        }
        return object(.array, fields: [(Constant.objects.rawValue, writer.add(.array(items)))])
    }

    private mutating func encodeDate(_ date: Date) -> Int {
        let time = writer.add(.real(date.timeIntervalSinceReferenceDate))
        return object(.date, fields: [(Constant.time.rawValue, time)])
    }

    private mutating func encodeUUID(_ uuid: UUID) -> Int {
        expandedBytes &+= 16
        let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
        let field = writer.add(.data(bytes))
        return object(.uuid, fields: [(writer.add(.string("NS.uuidbytes")), field)])
    }

    private mutating func encodeURL(_ url: URL, path: @autoclosure () -> String) throws(WormholeError) -> Int {
        var base = 0
        if let baseURL = url.baseURL { base = try encode(baseURL, path: "\(path()).baseURL") }
        let relative = try shared(url.relativeString)
        return object(.url, fields: [
            (writer.add(.string("NS.base")), uidReference(base)), (writer.add(.string("NS.relative")), uidReference(relative)),
        ])
    }

    private mutating func encodeSet(_ members: some Sequence<Any>, count: Int, path: @autoclosure () -> String) throws(WormholeError) -> Int {
        try descend(path())
        defer { depthLeft += 1 }
        var items: [Int] = []
        items.reserveCapacity(count)
        for (index, member) in members.enumerated() {
            // Receivers refuse objects of the user's own in a set: one may equal another yet hash apart.
            if let object = member as? NSObject, !(object is NSNull), !FoundationClasses.contains(type(of: object)) {
                throw WormholeError(.unsupportedValue, "\(path())[member \(index)] is a \(type(of: object)); a set may hold values only")
            }
            // Receivers refuse a set that holds a set: Swift on Linux traps comparing some of them.
            if KeyedArchiveDecoder.holdsSet(member) {
                throw WormholeError(.unsupportedValue, "\(path())[member \(index)] is or holds a set; a set may not hold a set")
            }
            items.append(uidReference(try encode(member, path: "\(path())[member \(index)]")))
        }
        return object(.set, fields: [(Constant.objects.rawValue, writer.add(.array(items)))])
    }

    /// An object of the user's own, through its `encode(with:)`; a Foundation class not written above is refused.
    private mutating func encodeUserObject(_ object: NSObject, path: @autoclosure () -> String) throws(WormholeError) -> Int {
        let type: AnyClass = Swift.type(of: object)
        guard !FoundationClasses.contains(type) else {
            throw WormholeError(
                .unsupportedValue, "\(path()) is a \(AllowedClasses.name(of: type)), a Foundation class Wormhole does not carry")
        }
        guard let secure = object as? any NSObject & NSSecureCoding, Swift.type(of: secure).supportsSecureCoding else {
            throw unsupported(object, path())
        }
        let id = ObjectIdentifier(object)
        if let uid = userObjectUIDs[id], let weight = userObjectWeights[id] {
            // Receivers count a shared object once per use: its whole weight, of which one element is counted.
            expandedElements &+= weight.elements - 1
            expandedBytes &+= weight.bytes - 8
            return uid
        }
        let start = (elements: expandedElements - 1, bytes: expandedBytes - 8)
        guard !userObjectsOpen.contains(id) else {
            throw WormholeError(.unsupportedValue, "\(path()) contains itself, which receivers refuse")
        }
        try descend(path())
        defer { depthLeft += 1 }
        userObjectsOpen.insert(id)
        defer { userObjectsOpen.remove(id) }

        let coder = KeyedObjectEncoder()
        secure.encode(with: coder)
        coder.close()
        if let failure = coder.failure {
            throw WormholeError(.unsupportedValue, "\(path()) could not be encoded: \(failure)")
        }
        var keys = [Constant.classKey.rawValue]
        var values = [uidReference(userClassUID(type))]
        for (key, field) in coder.fields {
            let value: Int
            switch field {
            case .object(.none):
                value = uidReference(0)
            case .object(.some(let item)):
                value = uidReference(try encode(item, path: "\(path()).\(key)"))
            case .conditionalObject(let item):
                // Written only when the same object is written unconditionally before; otherwise nil.
                let written = (item as? NSObject).map(ObjectIdentifier.init)
                if let written, let weight = userObjectWeights[written] {
                    expandedElements &+= weight.elements
                    expandedBytes &+= weight.bytes
                }
                value = uidReference(written.flatMap { userObjectUIDs[$0] } ?? 0)
            case .integer(let number): value = writer.add(.integer(number))
            case .unsignedInteger(let number): value = writer.add(.unsignedInteger(number))
            case .real(let number): value = writer.add(.real(number))
            case .bool(let flag): value = writer.add(.bool(flag))
            case .bytes(let bytes):
                try spend(bytes.count)
                expandedBytes &+= bytes.count
                value = writer.add(.data(Data(bytes)))
            }
            expandedElements &+= 1
            expandedBytes &+= 8
            try spend(key.utf8.count)
            // Foundation's archiver writes a key that starts with "$" with one more "$" in front.
            keys.append(writer.add(.string(key.hasPrefix("$") ? "$" + key : key)))
            values.append(value)
        }
        let uid = append(writer.add(.dictionary(keys: keys, values: values)))
        userObjectUIDs[id] = uid
        userObjectWeights[id] = (expandedElements - start.elements, expandedBytes - start.bytes)
        userObjectsKept.append(object)
        return uid
    }

    /// The class entry of a class of the user's own: its name, and its superclasses' names up to NSObject.
    private mutating func userClassUID(_ type: AnyClass) -> Int {
        let id = ObjectIdentifier(type)
        if let uid = userClassUIDs[id] { return uid }
        let name = writer.add(.string(AllowedClasses.name(of: type)))
        var chain = [name]
        var ancestor: AnyClass? = _getSuperclass(type)
        while let current = ancestor {
            chain.append(writer.add(.string(AllowedClasses.name(of: current))))
            ancestor = _getSuperclass(current)
        }
        let list = writer.add(.array(chain))
        let uid = append(
            writer.add(.dictionary(keys: [Constant.classes.rawValue, Constant.classname.rawValue], values: [list, name])))
        userClassUIDs[id] = uid
        return uid
    }


    private mutating func encodeDictionary(
        _ pairs: some Sequence<(AnyHashable, Any)>, count: Int, path: @autoclosure () -> String
    ) throws(WormholeError) -> Int {
        try descend(path())
        defer { depthLeft += 1 }
        var keys: [Int] = []
        var values: [Int] = []
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        for (key, item) in pairs {
            let keyUID: Int
            switch key.base {
            case let string as String: keyUID = try shared(string)
            case let number as NSNumber: keyUID = encodeNumber(number)
            case let integer as Int: keyUID = self.number(.integer(Int64(integer)))
            default:
                throw WormholeError(.unsupportedValue, "\(path()) has a key of type \(Swift.type(of: key.base)); use String keys")
            }
            expandedElements &+= 1
            expandedBytes &+= 8
            keys.append(uidReference(keyUID))
            values.append(uidReference(try encode(item, path: "\(path())[\"\(key.base)\"]")))
        }
        return object(
            .dictionary, fields: [(Constant.keys.rawValue, writer.add(.array(keys))), (Constant.objects.rawValue, writer.add(.array(values)))])
    }

    private mutating func encodeNumber(_ number: NSNumber) -> Int {
        // NSNumber's type letters: c is a Bool (or a char), d and f are reals, Q an unsigned 64-bit integer.
        switch number.objCType.pointee {
        case CChar(UInt8(ascii: "c")) where number.int64Value == 0 || number.int64Value == 1:
            return self.number(.bool(number.boolValue))
        case CChar(UInt8(ascii: "d")), CChar(UInt8(ascii: "f")):
            return self.number(.real(number.doubleValue))
        case CChar(UInt8(ascii: "Q")) where number.uint64Value > UInt64(Int64.max):
            return encodeUnsigned(number.uint64Value)
        default:
            return self.number(.integer(number.int64Value))
        }
    }

    private mutating func encodeUnsigned(_ value: UInt64) -> Int {
        if value <= UInt64(Int64.max) { return number(.integer(Int64(value))) }
        return number(.unsignedInteger(value))
    }

    /// A number, written inline each time: cheaper than looking for an equal one.
    private mutating func number(_ object: BinaryPropertyListWriter.Object) -> Int {
        append(writer.add(object))
    }

    private mutating func shared(_ string: String) throws(WormholeError) -> Int {
        expandedBytes &+= string.utf8.count
        if recentStrings.count < 16 {
            for (candidate, uid) in recentStrings where candidate == string { return uid }
        } else if let uid = sharedStrings[string] {
            return uid
        }
        try spend(string.utf8.count)
        // Not a writer constant: "$null" as a value must be an object of its own, not index 0.
        let uid = append(writer.add(.string(string)))
        if recentStrings.count < 16 {
            recentStrings.append((string, uid))
            if recentStrings.count == 16 { sharedStrings = Dictionary(recentStrings, uniquingKeysWith: { first, _ in first }) }
        } else {
            sharedStrings[string] = uid
        }
        return uid
    }

    /// An object with a `$class` and `fields`.
    private mutating func object(_ known: KnownClass, fields: [(Int, Int)]) -> Int {
        var keys = [Constant.classKey.rawValue]
        var values = [uidReference(classUID(known))]
        for (name, value) in fields {
            keys.append(name)
            values.append(value)
        }
        return append(writer.add(.dictionary(keys: keys, values: values)))
    }

    private mutating func classUID(_ known: KnownClass) -> Int {
        if classUIDs[known.rawValue] >= 0 { return classUIDs[known.rawValue] }
        let name = writer.add(.string(known.name))
        let list = writer.add(.array([name, Constant.nsObject.rawValue]))
        let uid = append(
            writer.add(.dictionary(keys: [Constant.classes.rawValue, Constant.classname.rawValue], values: [list, name])))
        classUIDs[known.rawValue] = uid
        return uid
    }

    /// Adds writer object `index` to `$objects`; returns its UID.
    private mutating func append(_ index: Int) -> Int {
        objects.append(index)
        return objects.count - 1
    }

    /// The writer index of a UID object for `uid`, each written once.
    private mutating func uidReference(_ uid: Int) -> Int {
        if uid < uids.count, uids[uid] >= 0 { return uids[uid] }
        if uid >= uids.count { uids.append(contentsOf: repeatElement(-1, count: uid - uids.count + 1)) }
        let index = writer.add(.uid(uid))
        uids[uid] = index
        return index
    }

    private mutating func spend(_ bytes: Int) throws(WormholeError) {
        bytesLeft -= bytes
        guard bytesLeft >= 0 else {
            throw WormholeError(.payloadTooLarge, "the value holds more than \(maximumSize) bytes of strings and data")
        }
    }

    private mutating func descend(_ path: String) throws(WormholeError) {
        depthLeft -= 1
        guard depthLeft >= 0 else {
            throw WormholeError(.unsupportedValue, "\(path) is nested deeper than \(Limits.archiveMaximumDepth) levels")
        }
    }
}
