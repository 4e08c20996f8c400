/// The last few long notification names a receive thread decoded, found again by their bytes: a listener mostly
/// receives a few names over and over, and a name found here is neither checked, nor decoded, nor allocated
/// again (the frames share its storage). Names of up to ``UTF8Text/inPlace`` bytes, which a string holds in
/// place, cost less to decode than to look up, and are not kept.
///
/// Only ever an exact match of a kept name's own UTF-8 bytes, which are the bytes it was decoded from (valid
/// UTF-8 decodes to itself), so a hit is what decoding would give. A name not found costs its decoding, as
/// without the cache, and a comparison with each kept name of its length (at most ``capacity`` of them, a word
/// at a time): a stream of distinct names, a poster's or a forger's, costs each frame at most that, and keeps
/// no more than ``capacity`` names.
package struct DecodedNames {
    /// How many names are kept.
    static let capacity = 8

    private var names: [String] = []
    /// The entry the next new name replaces, once all are taken.
    private var oldest = 0
    private let keeps: Bool

    /// A cache that keeps the long names it decodes (`keeps`), or, without, decodes every name anew: for readers
    /// of stored frames, which do not read the same names over and over.
    package init(keeps: Bool = true) {
        self.keeps = keeps
    }

    /// The name whose UTF-8 bytes are `field`: the one kept for the same bytes, or `field` decoded; nil when it is
    /// not valid UTF-8.
    mutating func name(_ field: UnsafeRawBufferPointer) -> String? {
        guard keeps, field.count > UTF8Text.inPlace else { return UTF8Text.string(field) }
        for index in names.indices where names[index].utf8.count == field.count {
            // A decoded long string's bytes are its own storage: compared where they lie.
            let same = names[index].utf8.withContiguousStorageIfAvailable { Self.equal(UnsafeRawBufferPointer($0), field) }
            if same == true { return names[index] }
        }
        guard let decoded = UTF8Text.string(field) else { return nil }
        if names.count < Self.capacity {
            names.append(decoded)
        } else {
            names[oldest] = decoded
            oldest = (oldest + 1) % Self.capacity
        }
        return decoded
    }

    /// Whether `a` and `b`, of the same count, hold the same bytes: eight at a time.
    private static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index + 8 <= a.count {
            guard a.loadUnaligned(fromByteOffset: index, as: UInt64.self) == b.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            else { return false }
            index += 8
        }
        while index < a.count {
            guard a[index] == b[index] else { return false }
            index += 1
        }
        return true
    }
}
