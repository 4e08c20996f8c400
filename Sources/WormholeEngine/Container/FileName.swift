/// How the container's files and folders are named from numbers: 16 lowercase hexadecimal digits for a 64-bit
/// value (a listener's socket, spool folder and registry entry, a poster's segments and lease), and a 64-bit
/// FNV-1a hash for text too long to spell out (a durable identity, a retained notification's name).
package enum FileName {
    /// `value` as 16 lowercase hexadecimal digits.
    package static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The value a name of 16 lowercase hexadecimal digits spells; nil for any other name.
    package static func value(ofHex name: String) -> UInt64? {
        guard name.utf8.count == 16, name.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return nil
        }
        return UInt64(name, radix: 16)
    }

    /// The 64-bit FNV-1a hash of `text`'s UTF-8.
    package static func fnv1a(_ text: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
