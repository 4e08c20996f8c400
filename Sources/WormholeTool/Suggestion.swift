/// The nearest of some words to a mistyped one, as `git` suggests a command: "did you mean listen?".
enum Suggestion {
    /// The farthest a suggestion may be from what was typed, in edits.
    static let maximumDistance = 2

    /// The candidates nearest to `typed`, at most ``maximumDistance`` edits away and fewer edits than `typed`
    /// has characters (so that `-x` is not taken for any two-letter word), joined by " or " when several are
    /// as near; nil when none is.
    static func nearest(to typed: String, among candidates: some Collection<String>) -> String? {
        // A long argument is no typo of a short word: not compared, so an argument of any size costs little.
        let typed = Array(typed)
        guard typed.count <= 64 else { return nil }
        let scored = candidates.map { (word: $0, distance: distance(typed, Array($0))) }
            .filter { $0.distance <= maximumDistance && $0.distance < typed.count }
        guard let best = scored.map(\.distance).min() else { return nil }
        return scored.filter { $0.distance == best }.map(\.word).sorted().joined(separator: " or ")
    }

    /// The edits (a character inserted, removed, replaced, or two neighbours swapped) that make `a` into `b`:
    /// the optimal string alignment distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
