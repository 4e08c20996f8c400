/// A process's observers on one container, in registration order, and the subscriptions they add up to.

struct ObserverTable {
    private(set) var observers: [Observer] = []
    private var counts: [Subscription: Int] = [:]
    /// The last answer of ``hasMatch(name:object:)``, with what it was asked: a process mostly posts one name many
    /// times in a row. Forgotten by every change of the observers.
    private var lastMatch: (name: String, object: String?, matches: Bool)?

    /// The distinct subscriptions, in a stable order, as the registry records them.
    var subscriptions: [Subscription] {
        counts.keys.sorted { ($0.name ?? "", $0.object ?? "") < ($1.name ?? "", $1.object ?? "") }
    }

    /// Adds `observer`; returns whether its subscription is new, so the registry must change.
    mutating func add(_ observer: Observer) -> Bool {
        lastMatch = nil
        observers.append(observer)
        counts[observer.subscription, default: 0] += 1
        return counts[observer.subscription] == 1
    }

    /// Removes the observers `shouldRemove` picks; returns them and whether the subscriptions changed.
    mutating func remove(where shouldRemove: (Observer) -> Bool) -> (removed: [Observer], changed: Bool) {
        var removed: [Observer] = []
        var changed = false
        lastMatch = nil
        observers.removeAll { observer in
            guard shouldRemove(observer) else { return false }
            removed.append(observer)
            let remaining = (counts[observer.subscription] ?? 1) - 1
            counts[observer.subscription] = remaining > 0 ? remaining : nil
            changed = changed || remaining == 0
            return true
        }
        return (removed, changed)
    }

    /// Whether any observer matches, without collecting them: asked on every post, and answered from the last
    /// answer when asked the same again.
    mutating func hasMatch(name: String, object: String?) -> Bool {
        if let last = lastMatch, last.name == name, last.object == object { return last.matches }
        let matches = observers.contains { $0.subscription.matches(name: name, object: object) }
        lastMatch = (name, object, matches)
        return matches
    }
}
