/// Counts the hashes of one dictionary's keys or one set's elements, and refuses more than a few alike.
///
/// A decoded dictionary's number keys, and a set's elements, hash as the sender chooses them: keys that all
/// hash alike turn each insertion into a walk over the others, seconds for a few thousand. Keys whose hashes
/// are spread out cost one counter update each.
struct HashBound {

    private var counts: [Int: Int] = [:]

    /// Counts `hash`; throws once more than ``Limits/maximumHashSharing`` values of container `index` share it.
    mutating func admit(_ hash: Int, in index: Int) throws(WormholeError) {
        let count = (counts[hash] ?? 0) + 1
        counts[hash] = count
        guard count <= Limits.maximumHashSharing else {
            throw WormholeError(.corruptData, "object \(index) has more than \(Limits.maximumHashSharing) keys with one hash")
        }
    }
}
