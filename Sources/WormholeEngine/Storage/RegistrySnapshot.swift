/// The registry as one reader parsed it, indexed by notification name so that matching costs the same
/// however many listeners observe other names.

struct RegistrySnapshot: Sendable {
    let entries: [RegistryEntry]
    /// Which of its registry's readings this is (``Registry/parses`` as it was made): a later one has a larger
    /// number, so what is worked out from a snapshot can be kept until its generation changes.
    let generation: Int
    private let byName: [String: [Int]]
    private let anyName: [Int]

    static let empty = RegistrySnapshot(entries: [], generation: 0)

    init(entries: [RegistryEntry], generation: Int) {
        self.entries = entries
        self.generation = generation
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

    /// Calls `body` with each listener that observes a notification of `name` from `object`, in registry order.
    func forEachListener(matching name: String, object: String?, _ body: (RegistryEntry) -> Void) {
        let named = byName[name] ?? []
        // Each list is in registry order already; only a merge of both needs sorting.
        let candidates = anyName.isEmpty ? named : named.isEmpty ? anyName : (named + anyName).sorted()
        for index in candidates where entries[index].matches(name: name, object: object) {
            body(entries[index])
        }
    }

    func entry(_ listener: UInt64) -> RegistryEntry? {
        entries.first { $0.listener == listener }
    }
}
