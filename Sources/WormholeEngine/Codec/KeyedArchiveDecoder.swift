import Foundation

/// Decodes a keyed archive (the `NSKeyedArchiver` format) of a userInfo dictionary, checking every byte first.
///
/// Nothing here hands received bytes to Foundation's `NSKeyedUnarchiver`. Property-list values and the other
/// Foundation classes people put in a userInfo (strings, numbers, data, dates, arrays, dictionaries, sets,
/// null, URLs, UUIDs) are decoded here; `NSSecureCoding` classes of the user's own are built by their
/// `init?(coder:)` from a ``KeyedObjectDecoder`` that serves the fields this decoder has already read and
/// checked. Every class name is matched against the allowed classes alone (never `NSClassFromString`), every
/// reference is in bounds, no object contains itself, key and object counts agree, nesting, expansion and
/// hash collisions are bounded, and a keyed object claiming a Foundation class this decoder does not read is
/// refused rather than handed on.
struct KeyedArchiveDecoder {

    /// The most bytes an archive of `size` bytes may expand into: 8 times its size plus 256 KiB, at most
    /// ``Limits/archiveMaximumExpandedBytes``. Sharing (an equal string used twice, an object referenced twice) is what
    /// makes an archive expand; a sender that shares a lot is refused before a consumer pays for it.
    static func expansionLimit(archiveSize size: Int) -> Int {
        min(Limits.archiveMaximumExpandedBytes, (256 << 10) + 8 * size)
    }


    /// The one `NSNull` every decoded null is: two NSNull instances are equal but hash apart, which would
    /// trap a set.
    static let null = NSNull()

    /// What an archived object expands into.
    private struct Weight {
        var elements: Int
        var bytes: Int

        static let leaf = Weight(elements: 1, bytes: 8)

        mutating func add(_ other: Weight) {
            elements += other.elements
            bytes += other.bytes
        }
    }

    /// What a `$class` entry names: a class read here, or an allowed class of the user's own.
    private enum ClassKind {
        case dictionary, array, set, string, date, data, null, url, uuid
        case user(AllowedClasses.UserClass)
    }

    private let plist: BinaryPropertyList
    private let objects: BinaryPropertyList.References
    private let allowed: AllowedClasses
    private let byteLimit: Int
    /// What is left of the archive's work budget, in references and bytes read (see ``Limits/archiveWorkFactor``).
    private var workLeft: Int
    /// Per archived object: its value once decoded, its expanded size, and whether it is being decoded now.
    private var values: [Any?]
    private var weights: [Weight]
    private var inProgress: [Bool]
    /// Class entries resolved so far, by UID: a few searched in order, then a table.
    private var recentClasses: [(uid: UInt64, kind: ClassKind, name: String)] = []
    private var classTable: [UInt64: (kind: ClassKind, name: String)] = [:]

    /// Decodes `bytes` into a userInfo dictionary whose values all belong to `allowed`.
    /// - Throws: ``WormholeError/Code/disallowedClass`` for a class outside `allowed`, and
    ///   ``WormholeError/Code/corruptData`` saying what is wrong and at which object, for anything malformed.
    static func decodeUserInfo(_ bytes: [UInt8], allowed: AllowedClasses) throws(WormholeError) -> [AnyHashable: Any] {
        guard let dictionary = try decodeRoot(bytes, allowed: allowed) as? [AnyHashable: Any] else {
            throw WormholeError(.corruptData, "archive's root object is not a dictionary")
        }
        return dictionary
    }

    /// Decodes the root object of `bytes`, whatever its type; nil when the root is `$null`.
    static func decodeRoot(_ bytes: [UInt8], allowed: AllowedClasses) throws(WormholeError) -> Any? {
        var decoder = try KeyedArchiveDecoder(bytes, allowed: allowed)
        return try decoder.decodeRoot()
    }

    private init(_ bytes: [UInt8], allowed: AllowedClasses) throws(WormholeError) {
        plist = try BinaryPropertyList(bytes)
        self.allowed = allowed
        byteLimit = Self.expansionLimit(archiveSize: bytes.count)
        workLeft = Limits.archiveWorkFactor * bytes.count + 4_096
        guard case .dictionary(let keys, let values) = try plist.object(plist.topObject) else {
            throw WormholeError(.corruptData, "archive's top level is not a dictionary")
        }
        var archiver: Int?
        var list: Int?
        for (key, value) in zip(keys, values) {
            if plist.isString(key, "$archiver") { archiver = value }
            if plist.isString(key, "$objects") { list = value }
        }
        guard let archiver, plist.isString(archiver, "NSKeyedArchiver") else {
            throw WormholeError(.corruptData, "archive's $archiver is not NSKeyedArchiver")
        }
        guard let list, case .array(let objects) = try plist.object(list), !objects.isEmpty else {
            throw WormholeError(.corruptData, "archive has no $objects array")
        }
        self.objects = objects
        self.values = Array(repeating: nil, count: objects.count)
        self.weights = Array(repeating: .leaf, count: objects.count)
        self.inProgress = Array(repeating: false, count: objects.count)
    }

    private mutating func decodeRoot() throws(WormholeError) -> Any? {
        try decode(try rootReference(), depth: 0)
    }

    private func rootReference() throws(WormholeError) -> UInt64 {
        guard case .dictionary(let keys, let values) = try plist.object(plist.topObject) else {
            throw WormholeError(.corruptData, "archive's top level is not a dictionary")
        }
        for (key, value) in zip(keys, values) where plist.isString(key, "$top") {
            guard case .dictionary(let topKeys, let topValues) = try plist.object(value) else { break }
            for (topKey, topValue) in zip(topKeys, topValues) where plist.isString(topKey, "root") {
                if case .uid(let root) = try plist.object(topValue) { return root }
            }
        }
        throw WormholeError(.corruptData, "archive has no $top root reference")
    }

    /// The value of archive object `uid`; nil for the `$null` reference.
    private mutating func decode(_ uid: UInt64, depth: Int) throws(WormholeError) -> Any? {
        guard uid != 0 else { return nil }
        guard uid < UInt64(objects.count) else {
            throw WormholeError(.corruptData, "reference \(uid) is outside the \(objects.count) archived objects")
        }
        let index = Int(uid)
        if let value = values[index] { return value }
        guard depth <= Limits.archiveMaximumDepth else {
            throw WormholeError(.corruptData, "object \(index) is nested deeper than \(Limits.archiveMaximumDepth) levels")
        }
        guard !inProgress[index] else {
            throw WormholeError(.corruptData, "object \(index) contains itself")
        }
        inProgress[index] = true
        defer { inProgress[index] = false }

        var weight = Weight.leaf
        let value: Any
        switch try parse(objects[index]) {
        case .string(let string):
            try require("NSString", as: .string, at: index)
            weight.bytes += string.utf8.count
            value = string
        case .integer(let number):
            try require("NSNumber", as: .number, at: index)
            value = NSNumber(value: number)
        case .unsignedInteger(let number):
            try require("NSNumber", as: .number, at: index)
            value = NSNumber(value: number)
        case .real(let number):
            try require("NSNumber", as: .number, at: index)
            value = NSNumber(value: number)
        case .bool(let flag):
            try require("NSNumber", as: .number, at: index)
            value = NSNumber(value: flag)
        case .data(let bytes):
            try require("NSData", as: .data, at: index)
            weight.bytes += bytes.count
            value = Data(bytes)
        case .dictionary(let keys, let fieldValues):
            (value, weight) = try decodeObject(index, keys: keys, values: fieldValues, depth: depth)
        default:
            throw WormholeError(.corruptData, "object \(index) is not an archived value")
        }
        weights[index] = weight
        values[index] = value
        return value
    }

    /// The fields of an archived object, found by name without making Strings of the keys.
    private struct Fields {
        let plist: BinaryPropertyList
        let keys: BinaryPropertyList.References
        let values: BinaryPropertyList.References

        subscript(name: StaticString) -> Int? {
            for (key, value) in zip(keys, values) where plist.isString(key, name) { return value }
            return nil
        }
    }

    /// An object with a `$class`: one of the classes decoded here, or an allowed class of the user's own.
    private mutating func decodeObject(
        _ index: Int, keys: BinaryPropertyList.References, values fieldValues: BinaryPropertyList.References, depth: Int
    )
        throws(WormholeError) -> (Any, Weight)
    {
        let fields = Fields(plist: plist, keys: keys, values: fieldValues)
        guard let classField = fields["$class"], case .uid(let classUID) = try parse(classField) else {
            throw WormholeError(.corruptData, "object \(index) has no $class reference")
        }
        let (kind, className) = try classKind(classUID, of: index)

        switch kind {
        case .dictionary:
            try require(className, as: .dictionary, at: index)
            let keyUIDs = try uidArray(fields["NS.keys"], "NS.keys", of: index)
            let valueUIDs = try uidArray(fields["NS.objects"], "NS.objects", of: index)
            guard keyUIDs.count == valueUIDs.count else {
                throw WormholeError(.corruptData, "object \(index) has \(keyUIDs.count) NS.keys but \(valueUIDs.count) NS.objects")
            }
            var dictionary: [AnyHashable: Any] = [:]
            dictionary.reserveCapacity(keyUIDs.count)
            var weight = Weight.leaf
            var numberKeys = HashBound()
            for (keyUID, valueUID) in zip(keyUIDs, valueUIDs) {
                let key = try element(keyUID, in: index, depth: depth, weight: &weight)
                let value = try element(valueUID, in: index, depth: depth, weight: &weight)
                // Not `key as? AnyHashable`: that cast looks up Hashable conformance at run time, every time.
                if let string = key as? String {
                    dictionary[AnyHashable(string)] = value
                } else if let number = key as? NSNumber {
                    // A number's hash is the sender's choice; a string's is seeded per process.
                    let hashable = AnyHashable(number)
                    try numberKeys.admit(hashable.hashValue, in: index)
                    dictionary[hashable] = value
                } else {
                    throw WormholeError(.corruptData, "object \(index) has a key that is not a string or number")
                }
            }
            return (dictionary, weight)
        case .array:
            try require(className, as: .array, at: index)
            var weight = Weight.leaf
            var array: [Any] = []
            for uid in try uidArray(fields["NS.objects"], "NS.objects", of: index) {
                array.append(try element(uid, in: index, depth: depth, weight: &weight))
            }
            return (array, weight)
        case .set:
            try require(className, as: .set, at: index)
            var weight = Weight.leaf
            var set = Set<AnyHashable>()
            var hashes = HashBound()
            for uid in try uidArray(fields["NS.objects"], "NS.objects", of: index) {
                let member = try Self.hashable(try element(uid, in: index, depth: depth, weight: &weight), in: index)
                try hashes.admit(member.hashValue, in: index)
                set.insert(member)
            }
            return (set, weight)
        case .string:
            try require(className, as: .string, at: index)
            guard let field = fields["NS.string"], case .string(let string) = try parse(field) else {
                throw WormholeError(.corruptData, "object \(index) (\(className)) has no string NS.string")
            }
            return (string, Weight(elements: 1, bytes: 8 + string.utf8.count))
        case .date:
            try require(className, as: .date, at: index)
            guard let field = fields["NS.time"] else {
                throw WormholeError(.corruptData, "object \(index) (NSDate) has no NS.time")
            }
            switch try parse(field) {
            case .real(let time): return (Date(timeIntervalSinceReferenceDate: time), .leaf)
            case .integer(let time): return (Date(timeIntervalSinceReferenceDate: Double(time)), .leaf)
            default: throw WormholeError(.corruptData, "object \(index) (NSDate) has an NS.time that is not a number")
            }
        case .data:
            try require(className, as: .data, at: index)
            guard let field = fields["NS.data"], case .data(let bytes) = try parse(field) else {
                throw WormholeError(.corruptData, "object \(index) (\(className)) has no data NS.data")
            }
            return (Data(bytes), Weight(elements: 1, bytes: 8 + bytes.count))
        case .null:
            try require(className, as: .null, at: index)
            // One instance for every null: two NSNull instances are equal but hash apart, which would trap a set.
            return (Self.null, .leaf)
        case .url:
            try require(className, as: .url, at: index)
            return try decodeURL(index, fields: fields, depth: depth)
        case .uuid:
            try require(className, as: .uuid, at: index)
            guard let field = fields["NS.uuidbytes"], case .data(let bytes) = try parse(field), bytes.count == 16 else {
                throw WormholeError(.corruptData, "object \(index) (NSUUID) has no 16 bytes of NS.uuidbytes")
            }
            let b = Array(bytes)
            let uuid = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
            return (uuid, Weight(elements: 1, bytes: 24))
        case .user(let type):
            return try decodeUserObject(index, type: type, className: className, fields: fields, depth: depth)
        }
    }

    /// An `NSURL`: `NS.relative`, a string, resolved against `NS.base`, another URL or `$null`.
    private mutating func decodeURL(_ index: Int, fields: Fields, depth: Int) throws(WormholeError) -> (Any, Weight) {
        guard let relativeField = fields["NS.relative"], case .uid(let relativeUID) = try parse(relativeField),
            relativeUID > 0, relativeUID < UInt64(objects.count),
            case .string(let relative) = try parse(objects[Int(relativeUID)])
        else {
            throw WormholeError(.corruptData, "object \(index) (NSURL) has no string NS.relative")
        }
        var weight = Weight(elements: 1, bytes: 8 + relative.utf8.count)
        var base: URL?
        if let baseField = fields["NS.base"] {
            guard case .uid(let baseUID) = try parse(baseField) else {
                throw WormholeError(.corruptData, "object \(index) (NSURL) has an NS.base that is not a reference")
            }
            if baseUID != 0 {
                guard let url = try decode(baseUID, depth: depth + 1) as? URL else {
                    throw WormholeError(.corruptData, "object \(index) (NSURL) has an NS.base that is not a URL")
                }
                weight.add(weights[Int(baseUID)])
                base = url
            }
        }
        guard let url = URL(string: relative, relativeTo: base) else {
            throw WormholeError(.corruptData, "object \(index) (NSURL) is not a valid URL")
        }
        return (url, weight)
    }

    /// An object of an allowed class of the user's own, built by its `init?(coder:)` from fields that are all
    /// decoded and checked before it runs.
    private mutating func decodeUserObject(
        _ index: Int, type: AllowedClasses.UserClass, className: String, fields: Fields, depth: Int
    ) throws(WormholeError) -> (Any, Weight) {
        var weight = Weight.leaf
        var coded: [String: CodedField] = [:]
        coded.reserveCapacity(fields.keys.count)
        for (key, field) in zip(fields.keys, fields.values) where !plist.isString(key, "$class") {
            guard case .string(var name) = try parse(key) else {
                throw WormholeError(.corruptData, "object \(index) (\(className)) has a field name that is not a string")
            }
            // Foundation writes a key that starts with "$" with one more "$" in front.
            if name.hasPrefix("$") { name.removeFirst() }
            switch try parse(field) {
            case .uid(let uid):
                let object = try decode(uid, depth: depth + 1)
                if uid != 0 { weight.add(weights[Int(uid)]) }
                coded[name] = .object(object)
            case .integer(let number): coded[name] = .integer(number)
            case .unsignedInteger(let number): coded[name] = .unsignedInteger(number)
            case .real(let number): coded[name] = .real(number)
            case .bool(let flag): coded[name] = .bool(flag)
            case .data(let bytes):
                weight.bytes += bytes.count
                coded[name] = .bytes(Array(bytes))
            default:
                throw WormholeError(.corruptData, "object \(index) (\(className)) has a field \(name) that no coder writes")
            }
            weight.elements += 1
            weight.bytes += 8
            try check(weight, index)
        }
        let coder = KeyedObjectDecoder(fields: coded, allowed: allowed, className: className)
        let object = type.init(coder: coder)
        coder.close()
        if let failure = coder.failure {
            throw WormholeError(.corruptData, "object \(index) (\(className)) could not be decoded: \(failure)")
        }
        guard let object else {
            throw WormholeError(.corruptData, "object \(index) (\(className)): init(coder:) returned nil")
        }
        return (object, weight)
    }

    /// Parses property-list object `index`, charging what that costs to the archive's work budget: a property
    /// list may share one object among many archived objects, which would then parse it once each.
    private mutating func parse(_ index: Int) throws(WormholeError) -> BinaryPropertyList.Object {
        let object = try plist.object(index)
        switch object {
        // A dictionary's keys are also searched by name, a few times.
        case .dictionary(let keys, _): workLeft -= 1 + 4 * keys.count
        case .array(let items), .set(let items): workLeft -= 1 + items.count
        case .string(let string): workLeft -= 1 + string.utf8.count
        case .data(let bytes): workLeft -= 1 + bytes.count
        default: workLeft -= 1
        }
        guard workLeft >= 0 else {
            throw WormholeError(.corruptData, "archive takes more work to read than its size allows: it shares objects")
        }
        return object
    }

    /// A set member as the set hashes it. Swift's value types are tested first: a cast of an array or a
    /// dictionary to a class bridges (copies) it. A member that is or holds a set is refused
    /// (``holdsSet(_:)``).
    static func hashable(_ value: Any, in index: Int) throws(WormholeError) -> AnyHashable {
        guard !holdsSet(value) else {
            throw WormholeError(.corruptData, "object \(index) is a set holding a set; a set may not hold one, at any depth")
        }
        switch value {
        case let string as String: return AnyHashable(string)
        case let array as [Any]: return AnyHashable(NSArray(array: array))
        case let dictionary as [AnyHashable: Any]: return AnyHashable(NSDictionary(dictionary: dictionary))
        case let data as Data: return AnyHashable(data)
        case let date as Date: return AnyHashable(date)
        case let url as URL: return AnyHashable(url)
        case let uuid as UUID: return AnyHashable(uuid)
        case let number as NSNumber: return AnyHashable(number)
        case let null as NSNull: return AnyHashable(null)
        default:
            // An object of the user's own may be equal to another yet hash apart, and a Swift set traps on that.
            throw WormholeError(.corruptData, "object \(index) is a set holding a \(type(of: value)); sets hold values only")
        }
    }

    /// Whether `value` is a set or holds one in its arrays and dictionaries. Swift on Linux traps when it compares
    /// two sets whose members are arrays or dictionaries (it bridges them to `NSSet`, whose comparison casts
    /// each member to `AnyHashable`), which it does when they hash alike as members of one set: so a set never
    /// holds a set, at any depth. What a poster sends is refused the same way when it posts.
    static func holdsSet(_ value: Any) -> Bool {
        switch value {
        case is Set<AnyHashable>, is NSSet: return true
        case let array as [Any]: return array.contains(where: holdsSet)
        case let dictionary as [AnyHashable: Any]: return dictionary.values.contains(where: holdsSet)
        default: return false
        }
    }

    /// Decodes one element of container `index`, adding its expanded size to `weight`.
    private mutating func element(_ uid: UInt64, in index: Int, depth: Int, weight: inout Weight) throws(WormholeError) -> Any {
        guard let value = try decode(uid, depth: depth + 1) else {
            throw WormholeError(.corruptData, "object \(index) holds a $null element")
        }
        weight.add(weights[Int(uid)])
        try check(weight, index)
        return value
    }

    private func check(_ weight: Weight, _ index: Int) throws(WormholeError) {
        guard weight.elements <= Limits.archiveMaximumElements else {
            throw WormholeError(.corruptData, "object \(index) expands into more than \(Limits.archiveMaximumElements) elements")
        }
        guard weight.bytes <= byteLimit else {
            throw WormholeError(.corruptData, "object \(index) expands into more than \(byteLimit) bytes")
        }
    }

    /// What class entry `uid` names, resolved once per entry and then found in constant time.
    private mutating func classKind(_ uid: UInt64, of index: Int) throws(WormholeError) -> (ClassKind, String) {
        for known in recentClasses where known.uid == uid { return (known.kind, known.name) }
        if let known = classTable[uid] { return known }
        let name = try className(uid, of: index)
        let kind = try resolve(name, at: index)
        if recentClasses.count < 8 {
            recentClasses.append((uid, kind, name))
        } else {
            classTable[uid] = (kind, name)
        }
        return (kind, name)
    }

    private mutating func className(_ uid: UInt64, of index: Int) throws(WormholeError) -> String {
        guard uid > 0, uid < UInt64(objects.count),
            case .dictionary(let keys, let values) = try parse(objects[Int(uid)])
        else {
            throw WormholeError(.corruptData, "object \(index) has a $class that is not a class entry")
        }
        for (key, value) in zip(keys, values) where plist.isString(key, "$classname") {
            if case .string(let name) = try parse(value) { return name }
        }
        throw WormholeError(.corruptData, "object \(index) has a class entry without $classname")
    }

    /// The class an archive names `name`: one read here, else an allowed class of the user's own by that
    /// exact name. Any other name claiming Foundation is malformed; any other name is not allowed.
    private func resolve(_ name: String, at index: Int) throws(WormholeError) -> ClassKind {
        switch name {
        case "NSDictionary", "NSMutableDictionary": return .dictionary
        case "NSArray", "NSMutableArray": return .array
        case "NSSet", "NSMutableSet": return .set
        case "NSString", "NSMutableString": return .string
        case "NSDate": return .date
        case "NSData", "NSMutableData": return .data
        case "NSNull": return .null
        case "NSURL": return .url
        case "NSUUID": return .uuid
        default:
            if let type = allowed.userClass(named: name) { return .user(type) }
            if FoundationClasses.claimed(by: name) {
                throw WormholeError(.corruptData, "object \(index) claims class \(name), which Wormhole does not read")
            }
            throw WormholeError(.disallowedClass, "object \(index) is of class \(name), which is not allowed")
        }
    }

    private mutating func uidArray(_ field: Int?, _ name: String, of index: Int) throws(WormholeError) -> [UInt64] {
        guard let field, case .array(let items) = try parse(field) else {
            throw WormholeError(.corruptData, "object \(index) has no \(name) array")
        }
        var result: [UInt64] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let uid = plist.uid(item) else {
                throw WormholeError(.corruptData, "object \(index) has an \(name) entry that is not a reference")
            }
            result.append(uid)
        }
        return result
    }

    private func require(_ name: String, as canonical: AllowedClasses.Canonical, at index: Int) throws(WormholeError) {
        guard allowed.permits(name, as: canonical) else {
            throw WormholeError(.disallowedClass, "object \(index) is of class \(name), which is not allowed")
        }
    }
}
