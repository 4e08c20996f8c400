/// The last `capacity` values inserted, the oldest overwritten first: what a reader remembers to recognise a
/// value it has seen (a spooled frame written twice, a shared frame's file sent again).
package struct RecentRing<Element: Equatable> {
    let capacity: Int
    private var ring: [Element] = []
    private var next = 0

    package init(capacity: Int) {
        self.capacity = capacity
    }

    package func contains(_ value: Element) -> Bool { ring.contains(value) }

    /// Adds `value` unless it is there already; returns false when it was.
    @discardableResult
    package mutating func insert(_ value: Element) -> Bool {
        if ring.contains(value) { return false }
        if ring.count < capacity {
            ring.append(value)
        } else {
            ring[next] = value
            next = (next + 1) % capacity
        }
        return true
    }
}

extension RecentRing where Element: Comparable {
    /// The largest value remembered; nil while empty.
    package var largest: Element? { ring.max() }
}
