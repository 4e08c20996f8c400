/// What a listing of the container's `retained/` or `values/` folder found: the names stored there, and the
/// entries skipped, each with why.
///
/// An entry is skipped when it is not what Wormhole writes there, or not whole: a name Wormhole never makes, a
/// FIFO, a symbolic link, a file over the size limit, a file whose frame is damaged or names another
/// notification. Skipping never changes or removes it (readers skip it too). A writer's temporary file, and an
/// entry removed while the folder was listed, are neither listed nor skipped.

package struct StoredNames {
    /// The names, sorted by their UTF-8 bytes.
    package var names: [String] = []
    /// The entries skipped: the file or folder name, and why.
    package var skipped: [(entry: String, reason: String)] = []

    mutating func skip(_ entry: String, _ reason: String) { skipped.append((entry, reason)) }

    /// The names in a stable order: by their UTF-8 bytes.
    mutating func sort() { names.sort { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) } }

    /// The name a file or folder of `retained/` or `values/` spells out (`n-` and its UTF-8 in hex, as
    /// ``RetainedStore/fileName(for:)`` makes it); nil for a hashed one (`h-`) and for any other name.
    static func spelledName(_ entry: String) -> String? {
        guard entry.hasPrefix(RetainedStore.spelledPrefix) else { return nil }
        let digits = Array(entry.utf8.dropFirst(RetainedStore.spelledPrefix.utf8.count))
        guard digits.count % 2 == 0, digits.count <= 2 * RetainedStore.longestSpelledName else {
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexDigit(digits[index]), let low = hexDigit(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        // Spelled again, it must give the entry back: bytes that are not UTF-8 (decoded with replacement
        // characters) and uppercase digits do not, so no two entries list as one name.
        let name = String(decoding: bytes, as: UTF8.self)
        return RetainedStore.fileName(for: name) == entry ? name : nil
    }

    /// Whether `entry` is a hashed name (`h-` and 16 lowercase hexadecimal digits).
    static func isHashedName(_ entry: String) -> Bool {
        entry.hasPrefix(RetainedStore.hashedPrefix)
            && FileName.value(ofHex: String(entry.dropFirst(RetainedStore.hashedPrefix.count))) != nil
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
