import Foundation

/// Decodes a keyed archive (the `NSKeyedArchiver` format) of a userInfo dictionary, checking every byte first.
///
/// Property-list values (strings, numbers, data, dates, arrays, dictionaries, sets, null) are decoded here,
/// never by Foundation. An archive that also holds `NSSecureCoding` classes of the user's own is handed to
/// `NSKeyedUnarchiver` only after the whole of it has been checked: every class name resolves to an allowed
/// class, every reference is in bounds, no object contains itself, key and object counts agree, and no
/// string reads `$null` (which Linux Foundation mistakes for nil).
struct KeyedArchiveDecoder {
    /// The deepest nesting of containers accepted.
    static let maximumDepth = 128
    /// The most elements an archive may expand into, counting a shared object once per use.
    static let maximumElements = 4_000_000

    private let plist: BinaryPropertyList
    private let objects: BinaryPropertyList.References
    private let allowed: AllowedClasses
    /// Per archived object: its value once decoded, its expanded size, and whether it is being decoded now.
    private var values: [Any?]
    private var weights: [Int]
    private var inProgress: [Bool]
    private var classNames: [(uid: UInt64, name: String)] = []
    private var foreignClasses: [AnyClass] = []
    private var holdsNullString = false

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
        return try decoder.decodeRoot(bytes)
    }

    private init(_ bytes: [UInt8], allowed: AllowedClasses) throws(WormholeError) {
        plist = try BinaryPropertyList(bytes)
        self.allowed = allowed
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
        self.weights = Array(repeating: 1, count: objects.count)
        self.inProgress = Array(repeating: false, count: objects.count)
    }

    private mutating func decodeRoot(_ bytes: [UInt8]) throws(WormholeError) -> Any? {
        let value = try decode(try rootReference(), depth: 0)
        return foreignClasses.isEmpty ? value : try decodeWithFoundation(bytes)
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
        guard depth <= Self.maximumDepth else {
            throw WormholeError(.corruptData, "object \(index) is nested deeper than \(Self.maximumDepth) levels")
        }
        guard !inProgress[index] else {
            throw WormholeError(.corruptData, "object \(index) contains itself")
        }
        inProgress[index] = true
        defer { inProgress[index] = false }

        var weight = 1
        let value: Any
        switch try plist.object(objects[index]) {
        case .string(let string):
            try require("NSString", as: .string, at: index)
            if string == "$null" { holdsNullString = true }
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

    /// An object with a `$class`: one of the classes decoded here, or a class left to Foundation.
    private mutating func decodeObject(
        _ index: Int, keys: BinaryPropertyList.References, values fieldValues: BinaryPropertyList.References, depth: Int
    )
        throws(WormholeError) -> (Any, Int)
    {
        let fields = Fields(plist: plist, keys: keys, values: fieldValues)
        guard let classField = fields["$class"], case .uid(let classUID) = try plist.object(classField) else {
            throw WormholeError(.corruptData, "object \(index) has no $class reference")
        }
        let className = try self.className(classUID, of: index)

        switch className {
        case "NSDictionary", "NSMutableDictionary":
            try require(className, as: .dictionary, at: index)
            let keyUIDs = try uidArray(fields["NS.keys"], "NS.keys", of: index)
            let valueUIDs = try uidArray(fields["NS.objects"], "NS.objects", of: index)
            guard keyUIDs.count == valueUIDs.count else {
                throw WormholeError(.corruptData, "object \(index) has \(keyUIDs.count) NS.keys but \(valueUIDs.count) NS.objects")
            }
            var dictionary: [AnyHashable: Any] = [:]
            dictionary.reserveCapacity(keyUIDs.count)
            var weight = 1
            for (keyUID, valueUID) in zip(keyUIDs, valueUIDs) {
                let key = try element(keyUID, in: index, depth: depth, weight: &weight)
                let value = try element(valueUID, in: index, depth: depth, weight: &weight)
                // Not `key as? AnyHashable`: that cast looks up Hashable conformance at run time, every time.
                if let string = key as? String {
                    dictionary[AnyHashable(string)] = value
                } else if let number = key as? NSNumber {
                    dictionary[AnyHashable(number)] = value
                } else {
                    throw WormholeError(.corruptData, "object \(index) has a key that is not a string or number")
                }
            }
            return (dictionary, weight)
        case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet":
            let isSet = className.hasSuffix("Set")
            try require(className, as: isSet ? .set : .array, at: index)
            var weight = 1
            var array: [Any] = []
            for uid in try uidArray(fields["NS.objects"], "NS.objects", of: index) {
                array.append(try element(uid, in: index, depth: depth, weight: &weight))
            }
            return (isSet ? NSSet(array: array) : array, weight)
        case "NSString", "NSMutableString":
            try require(className, as: .string, at: index)
            guard let field = fields["NS.string"], case .string(let string) = try plist.object(field) else {
                throw WormholeError(.corruptData, "object \(index) (\(className)) has no string NS.string")
            }
            if string == "$null" { holdsNullString = true }
            return (string, 1)
        case "NSDate":
            try require(className, as: .date, at: index)
            guard let field = fields["NS.time"] else {
                throw WormholeError(.corruptData, "object \(index) (NSDate) has no NS.time")
            }
            switch try plist.object(field) {
            case .real(let time): return (Date(timeIntervalSinceReferenceDate: time), 1)
            case .integer(let time): return (Date(timeIntervalSinceReferenceDate: Double(time)), 1)
            default: throw WormholeError(.corruptData, "object \(index) (NSDate) has an NS.time that is not a number")
            }
        case "NSData", "NSMutableData":
            try require(className, as: .data, at: index)
            guard let field = fields["NS.data"], case .data(let bytes) = try plist.object(field) else {
                throw WormholeError(.corruptData, "object \(index) (\(className)) has no data NS.data")
            }
            return (Data(bytes), 1)
        case "NSNull":
            try require(className, as: .null, at: index)
            return (NSNull(), 1)
        default:
            return try checkForeignObject(index, className: className, keys: keys, values: fieldValues, depth: depth)
        }
    }

    /// An object of a class Foundation must decode: the class must be allowed and secure-coding, and every
    /// object it refers to is checked like the rest of the archive.
    private mutating func checkForeignObject(
        _ index: Int, className: String, keys: BinaryPropertyList.References, values fields: BinaryPropertyList.References,
        depth: Int
    ) throws(WormholeError) -> (Any, Int)
    {
        guard let type = NSClassFromString(className) else {
            throw WormholeError(.disallowedClass, "object \(index) is of unknown class \(className)")
        }
        guard allowed.permits(type) else {
            throw WormholeError(.disallowedClass, "object \(index) is of class \(className), which is not allowed")
        }
        guard let secure = type as? any NSSecureCoding.Type, secure.supportsSecureCoding else {
            throw WormholeError(.disallowedClass, "object \(index) is of class \(className), which is not NSSecureCoding")
        }
        foreignClasses.append(type)
        var weight = 1
        for (key, field) in zip(keys, fields) where !plist.isString(key, "$class") {
            switch try plist.object(field) {
            case .uid(let uid):
                _ = try decode(uid, depth: depth + 1)
                weight += uid == 0 ? 0 : weights[Int(uid)]
            case .array(let items):
                for item in items {
                    if case .uid(let uid) = try plist.object(item) {
                        _ = try decode(uid, depth: depth + 1)
                        weight += uid == 0 ? 0 : weights[Int(uid)]
                    }
                }
            default:
                continue
            }
            guard weight <= Self.maximumElements else { throw tooLarge(index) }
        }
        return (NSNull(), weight)
    }

    /// Decodes one element of container `index`, adding its expanded size to `weight`.
    private mutating func element(_ uid: UInt64, in index: Int, depth: Int, weight: inout Int) throws(WormholeError) -> Any {
        guard let value = try decode(uid, depth: depth + 1) else {
            throw WormholeError(.corruptData, "object \(index) holds a $null element")
        }
        weight += weights[Int(uid)]
        guard weight <= Self.maximumElements else { throw tooLarge(index) }
        return value
    }

    private func tooLarge(_ index: Int) -> WormholeError {
        WormholeError(.corruptData, "object \(index) expands into more than \(Self.maximumElements) elements")
    }

    private mutating func className(_ uid: UInt64, of index: Int) throws(WormholeError) -> String {
        if let known = classNames.first(where: { $0.uid == uid }) { return known.name }
        guard uid > 0, uid < UInt64(objects.count),
            case .dictionary(let keys, let values) = try plist.object(objects[Int(uid)])
        else {
            throw WormholeError(.corruptData, "object \(index) has a $class that is not a class entry")
        }
        for (key, value) in zip(keys, values) where plist.isString(key, "$classname") {
            if case .string(let name) = try plist.object(value) {
                classNames.append((uid, name))
                return name
            }
        }
        throw WormholeError(.corruptData, "object \(index) has a class entry without $classname")
    }

    private func uidArray(_ field: Int?, _ name: String, of index: Int) throws(WormholeError) -> [UInt64] {
        guard let field, case .array(let items) = try plist.object(field) else {
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

    /// Hands a fully checked archive that holds classes of the user's own to Foundation.
    private func decodeWithFoundation(_ bytes: [UInt8]) throws(WormholeError) -> Any? {
        guard !holdsNullString else {
            throw WormholeError(.corruptData, "archive holds the string \"$null\", which Foundation on this platform misreads")
        }
        let classes: [AnyClass] = allowed.classes + foreignClasses
        do {
            return try NSKeyedUnarchiver.unarchivedObject(ofClasses: classes, from: Data(bytes))
        } catch {
            throw WormholeError(.corruptData, "Foundation could not decode the archive: \(error)")
        }
    }
}
