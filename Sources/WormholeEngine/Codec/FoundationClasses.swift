import Foundation
import Synchronization

/// Which classes and class names are Foundation's (or the system's) rather than the user's own.
///
/// Foundation's classes are never archived through `encode(with:)` nor decoded through `init(coder:)` here:
/// the codec reads and writes the ones people put in a userInfo itself, and refuses the others. Nothing here
/// looks a class up by name (`NSClassFromString`).
enum FoundationClasses {
    /// Whether `type` belongs to Foundation or the system rather than to the user's code.
    static func contains(_ type: AnyClass) -> Bool {
        let id = ObjectIdentifier(type)
        if let known = verdicts.withLock({ $0[id] }) { return known }
        // Swift names a class by its module: "Foundation.NSValue" here, "__C.NSValue" for an Objective-C class.
        let module = String(String(reflecting: type).prefix { $0 != "." })
        let verdict = module == "__C" ? isSystemObjectiveCClass(type) : systemModules.contains(module)
        verdicts.withLock { $0[id] = verdict }
        return verdict
    }

    /// Whether an archived class name claims a class of Foundation or the system.
    static func claimed(by name: String) -> Bool {
        systemPrefixes.contains { name.hasPrefix($0) }
    }

    private static let systemModules: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
        "FoundationXML", "CoreFoundation", "Swift", "Dispatch",
    ]
    private static let systemPrefixes = ["NS", "_NS", "__NS", "CF", "_CF", "__CF", "Foundation", "Swift.", "_Swift", "__Swift", "__C."]
    private static let verdicts = Mutex<[ObjectIdentifier: Bool]>([:])
}
