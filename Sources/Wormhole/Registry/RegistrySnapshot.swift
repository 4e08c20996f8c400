/// The registry as one reader parsed it, indexed by notification name so that matching costs the same
/// however many listeners observe other names.
struct RegistrySnapshot: Sendable {
    let entries: [RegistryEntry]
    private let byName: [String: [Int]]
    private let anyName: [Int]

    static let empty = RegistrySnapshot(entries: [])

    init(entries: [RegistryEntry]) {
        self.entries = entries
        var byName: [String: [Int]] = [:]
        var anyName: [Int] = []
        for (index, entry) in entries.enumerated() {
            var names = Set<String>()
            var observesAny = false
            for subscription in entry.subscriptions {
                if let name = subscription.name { names.insert(name) } else { observesAny = true }
            }
            if observesAny { anyName.append(index) }
            for name in names where !observesAny { byName[name, default: []].append(index) }
        }
        self.byName = byName
        self.anyName = anyName
    }

    /// The listeners that observe a notification of `name` from `object`.
    func listeners(matching name: String, object: String?) -> [RegistryEntry] {
        let candidates = (byName[name] ?? []) + anyName
        return candidates.sorted().compactMap { index in
            entries[index].matches(name: name, object: object) ? entries[index] : nil
        }
    }

    func entry(_ listener: UInt64) -> RegistryEntry? {
        entries.first { $0.listener == listener }
    }
}
