import Foundation
import Synchronization

/// The classes an observer accepts in a userInfo, as Foundation's `allowedClasses`.
package struct AllowedClasses: Sendable {
    /// The property-list classes: what a group value and a typed message hold.
    package static let propertyList = AllowedClasses([
        NSArray.self, NSDictionary.self, NSString.self, NSNumber.self, NSData.self, NSDate.self,
    ])

    /// What a group value holds: the property-list classes, and `NSNull` for nil.
    package static let groupValue = AllowedClasses([
        NSArray.self, NSDictionary.self, NSString.self, NSNumber.self, NSData.self, NSDate.self, NSNull.self,
    ])

    /// The value classes: every kind of value a poster may send without a class of its own (property-list
    /// values, `NSNull`, sets, URLs and UUIDs), which Wormhole's codec reads itself. Every observer accepts them;
    /// an `allowedClasses` argument adds classes of the user's own to them.
    static let valueClasses: [AnyClass] = [
        NSString.self, NSNumber.self, NSData.self, NSDate.self, NSArray.self, NSDictionary.self, NSSet.self,
        NSNull.self, NSURL.self, NSUUID.self,
    ]

    /// What an observer accepts when it names no classes: the value classes.
    package static let values = AllowedClasses(valueClasses)

    /// The value classes and `classes`: what an observer that passes `allowedClasses` accepts.
    package static func adding(_ classes: [AnyClass]) -> AllowedClasses {
        classes.isEmpty ? values : cached(valueClasses + classes)
    }

    /// The classes Wormhole decodes itself, each read as its immutable Foundation class.
    enum Canonical: Int, CaseIterable {
        case string, number, data, date, array, dictionary, set, null, url, uuid

        var name: String {
            ["NSString", "NSNumber", "NSData", "NSDate", "NSArray", "NSDictionary", "NSSet", "NSNull", "NSURL", "NSUUID"][rawValue]
        }
    }

    /// A class of the user's own that archives may hold: it supports secure coding, and is decoded through its
    /// `init?(coder:)` by ``KeyedObjectDecoder``.
    typealias UserClass = any (NSObject & NSSecureCoding).Type

    let classes: [AnyClass]
    let names: Set<String>
    /// Identifies the set, so that one decoding can serve every observer with the same classes.
    package let key: String
    /// Which canonical classes are allowed, one bit each (all of them when NSObject is): checked per archived
    /// object without hashing a name.
    private let canonical: UInt16
    /// The allowed classes of the user's own, by the name an archive gives them. A class is found only by its
    /// exact name among these, never looked up otherwise: a subclass must be allowed itself.
    private let userClasses: [String: UserClass]

    init(_ classes: [AnyClass]) {
        self.classes = classes
        let names = classes.map(Self.name(of:))
        self.names = Set(names)
        self.key = names.count == 1 ? names[0] : self.names.sorted().joined(separator: ",")
        var canonical: UInt16 = 0
        for kind in Canonical.allCases where self.names.contains(kind.name) || self.names.contains("NSObject") {
            canonical |= 1 << kind.rawValue
        }
        self.canonical = canonical
        var userClasses: [String: UserClass] = [:]
        for index in classes.indices where !FoundationClasses.contains(classes[index]) {
            if let secure = classes[index] as? UserClass, secure.supportsSecureCoding { userClasses[names[index]] = secure }
        }
        self.userClasses = userClasses
    }

    /// The allowed classes of `classes`, built once per distinct list (building one looks up every name).
    package static func cached(_ classes: [AnyClass]) -> AllowedClasses {
        let key = classes.map(ObjectIdentifier.init)
        if let known = built.withLock({ $0[key] }) { return known }
        let made = AllowedClasses(classes)
        built.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[key] = made
        }
        return made
    }

    private static let built = Mutex<[[ObjectIdentifier]: AllowedClasses]>([:])

    /// Whether an archived object of class `name`, which Wormhole decodes itself as `canonical`, is accepted.
    func permits(_ name: String, as kind: Canonical) -> Bool {
        canonical & (1 << kind.rawValue) != 0 || names.contains(name)
    }

    /// The allowed class of the user's own that an archive names `name`, if there is one.
    func userClass(named name: String) -> UserClass? {
        userClasses.isEmpty ? nil : userClasses[name]
    }

    /// Whether a decoded value is of one of `classes` (or of a subclass), as `decodeObject(of:forKey:)` checks.
    ///
    /// Swift's value types are tested first: a cast of an array or dictionary to a class bridges (copies) it.
    static func value(_ value: Any, isOneOf classes: [AnyClass]) -> Bool {
        let type: AnyClass
        switch value {
        case is String: type = NSString.self
        case is [Any]: type = NSArray.self
        case is [AnyHashable: Any]: type = NSDictionary.self
        case is Set<AnyHashable>: type = NSSet.self
        case is Data: type = NSData.self
        case is Date: type = NSDate.self
        case is URL: type = NSURL.self
        case is UUID: type = NSUUID.self
        case let object as NSObject: type = Swift.type(of: object)
        default: return false
        }
        guard let object = type as? NSObject.Type else { return false }
        return classes.contains { object.isSubclass(of: $0) }
    }

    /// Class names by class, since `NSStringFromClass` costs microseconds here and callers repeat themselves.
    private static let knownNames = Mutex<[ObjectIdentifier: String]>([:])

    static func name(of type: AnyClass) -> String {
        let id = ObjectIdentifier(type)
        // The value classes and NSObject by identity: on Linux the first `NSStringFromClass` of a process scans
        // every protocol conformance the process has (about 70 million instructions), which every process that
        // posts or observes a userInfo would pay as it starts.
        if let index = valueClasses.firstIndex(where: { ObjectIdentifier($0) == id }), index < Canonical.allCases.count {
            return Canonical.allCases[index].name
        }
        if id == ObjectIdentifier(NSObject.self) { return "NSObject" }
        if let name = knownNames.withLock({ $0[id] }) { return name }
        let name = NSStringFromClass(type)
        knownNames.withLock { $0[id] = name }
        return name
    }
}
