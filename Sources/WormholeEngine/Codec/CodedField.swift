import Foundation

/// One field of an archived object of a class of the user's own: what `encode(with:)` wrote under a key, or
/// what `init?(coder:)` may read from it. Objects are referenced; numbers and bytes sit in the object itself,
/// as Foundation's keyed archiver writes them.
enum CodedField {
    /// An object (nil for `$null`): decoded already when reading, still to be archived when writing.
    case object(Any?)
    /// An object written with `encodeConditionalObject(_:forKey:)`: archived only if archived elsewhere.
    case conditionalObject(Any?)
    case integer(Int64)
    case unsignedInteger(UInt64)
    case real(Double)
    case bool(Bool)
    case bytes([UInt8])
}
