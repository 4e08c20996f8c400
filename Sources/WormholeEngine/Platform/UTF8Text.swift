/// Strings made from bytes another process wrote, which must be valid UTF-8: names, objects and the strings of a
/// compact userInfo. Most are short ASCII, and made here at about half what `String(decoding:as:)` costs.
package enum UTF8Text {
    /// `bytes` as a string, or nil when they are not valid UTF-8.
    @inline(__always)
    package static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        if isASCII(bytes) { return ascii(bytes) }
        // Not String(validating:), which is unspecialised here and costs as much as the rest of a small archive.
        // String(decoding:) repairs what is not UTF-8: the string differs from its bytes exactly then.
        var string = String(decoding: bytes, as: UTF8.self)
        return string.withUTF8 { $0.elementsEqual(bytes) } ? string : nil
    }

    /// Whether every byte of `bytes` is ASCII, which is valid UTF-8 as it is.
    @inline(__always)
    package static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.contains { $0 >= 0x80 }
    }

    /// `bytes`, every one ASCII (``isASCII(_:)``), as a string. One short enough to be held in the string itself
    /// is copied there, and its bytes are not looked at again: `String(decoding:as:)` checks them once more and
    /// then gathers the string byte by byte. (Where a string holds fewer in itself than ``inPlace``, on watchOS's
    /// 32-bit pointers, a longer one is made with storage of its own and checked again: the same string, slower.)
    @inline(__always)
    package static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        guard bytes.count <= inPlace else { return String(decoding: bytes, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: bytes.count) { utf8 in
            UnsafeMutableRawBufferPointer(utf8).copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// The most UTF-8 bytes a string holds in itself, without storage of its own, on 64-bit platforms (10 with
    /// watchOS's 32-bit pointers).
    package static let inPlace = 15
}
