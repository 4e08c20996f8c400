/// How a relay's posts are told apart from every other poster's: a relay's center draws its poster ids with the
/// top bit set, every other center with it clear. A relay skips what carries the mark, so that nothing it posted
/// into its group is sent back where it came from, also after it restarted with another id.
package enum RelayMark {
    private static let bit: UInt64 = 1 << 63

    /// A fresh poster id, never 0: marked for a relay's center, unmarked for every other.
    package static func poster(relayed: Bool) -> UInt64 {
        relayed ? UInt64.random(in: bit...UInt64.max) : UInt64.random(in: 1..<bit)
    }

    /// A relay's poster id that stays the same across its runs, made of `seed` (a hash of what it relays for):
    /// it posts what it received with that id and a sequence of its own, the same if it posts it again, so
    /// that listeners drop the copy.
    package static func stablePoster(_ seed: UInt64) -> UInt64 { bit | max(seed & ~bit, 1) }

    /// Whether `poster` is a relay's.
    package static func isRelayed(_ poster: UInt64) -> Bool { poster & bit != 0 }
}
