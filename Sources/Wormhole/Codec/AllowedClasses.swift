import Foundation

/// The classes an observer accepts in a userInfo, as Foundation's `allowedClasses`.
struct AllowedClasses: Sendable {
    /// The property-list classes: what an observer accepts unless it says otherwise.
    static let propertyList = AllowedClasses([
        NSArray.self, NSDictionary.self, NSString.self, NSNumber.self, NSData.self, NSDate.self,
    ])

    /// Safe because class objects are immutable metadata, shared freely between threads.
    let classes: [AnyClass]
    let names: Set<String>
    /// Identifies the set, so that one decoding can serve every observer with the same classes.
    let key: String

    init(_ classes: [AnyClass]) {
        self.classes = classes
        self.names = Set(classes.map { NSStringFromClass($0) })
        self.key = names.sorted().joined(separator: ",")
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
}
