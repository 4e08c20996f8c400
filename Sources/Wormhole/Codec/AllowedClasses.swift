import Foundation
import Synchronization

/// The classes an observer accepts in a userInfo, as Foundation's `allowedClasses`.
struct AllowedClasses: Sendable {
    /// The property-list classes: what an observer accepts unless it says otherwise.
    static let propertyList = AllowedClasses([
        NSArray.self, NSDictionary.self, NSString.self, NSNumber.self, NSData.self, NSDate.self,
    ])

    let classes: [AnyClass]
    let names: Set<String>
    /// Identifies the set, so that one decoding can serve every observer with the same classes.
    let key: String

    init(_ classes: [AnyClass]) {
        self.classes = classes
        let names = classes.map(Self.name(of:))
        self.names = Set(names)
        self.key = names.count == 1 ? names[0] : self.names.sorted().joined(separator: ",")
    }

    /// Whether an archived object of class `name`, which Wormhole decodes itself as `canonical`, is accepted.
    func permits(_ name: String, as canonical: String) -> Bool {
        names.contains(canonical) || names.contains(name) || names.contains("NSObject")
    }

    /// Whether a class that Foundation must decode is accepted: it, or a class it inherits from, is allowed.
    func permits(_ type: AnyClass) -> Bool {
        guard let object = type as? NSObject.Type else { return false }
        return classes.contains { object.isSubclass(of: $0) }
    }

    /// Class names by class, since `NSStringFromClass` costs microseconds here and callers repeat themselves.
    private static let knownNames = Mutex<[ObjectIdentifier: String]>([:])

    private static func name(of type: AnyClass) -> String {
        let id = ObjectIdentifier(type)
        if let name = knownNames.withLock({ $0[id] }) { return name }
        let name = NSStringFromClass(type)
        knownNames.withLock { $0[id] = name }
        return name
    }
}
