import Foundation

/// A safe stand-in for `NSKeyedArchiver` and `NSKeyedUnarchiver` with secure coding, in their format.
///
/// Everything is written and read by Wormhole itself, never by Foundation's archiver or unarchiver: property-list
/// values (String, Bool, integers, Double, Float, Date, Data, arrays, dictionaries), `NSNull`, sets, URLs and
/// UUIDs directly, and `NSSecureCoding` classes of your own through their `encode(with:)` and `init?(coder:)`
/// with coders of Wormhole's, which serve a graph already checked on every byte. So no archive, however
/// crafted, traps, overflows the stack, stalls on colliding keys or expands without bound; and archiving works
/// in a statically linked program, where Foundation's archiver returns no bytes. The format is Foundation's:
/// its unarchiver reads what this writes, and this reads what its archiver writes.
///
/// On Linux this matters beyond Wormhole: Foundation's unarchiver there traps on a class outside the allowed
/// set, crashes on several malformed archives, and misreads the ordinary string `"$null"`.
public enum SecureArchive {
    /// The keyed archive of `object`, readable by `NSKeyedUnarchiver` on any platform.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming where a value is neither a property-list value
    ///   nor `NSSecureCoding` of your own (other Foundation classes are refused), contains itself, could not be
    ///   encoded, or nests deeper than 128 levels. Never returns empty data.
    public static func archivedData(withRootObject object: Any) throws -> Data {
        Data(try KeyedArchiveEncoder.encode(object, path: "root", maximumSize: .max))
    }

    /// Decodes an archive whose objects all belong to `classes`.
    ///
    /// Decoded values are Swift's: `String`, `NSNumber` (which bridges to `Int`, `Double`, `Bool`), `Data`,
    /// `Date`, `[Any]`, `[AnyHashable: Any]`, `Set<AnyHashable>`, `URL`, `UUID`, `NSNull`, and instances of your
    /// own classes. A class of your own must be in `classes` itself (a subclass of an allowed class is not
    /// allowed by that), and is built by its `init?(coder:)`; an object that contains itself is refused.
    /// - Returns: The root object, or nil when the archive's root is nil.
    /// - Throws: ``WormholeError/Code/disallowedClass`` for a class outside `classes`, and
    ///   ``WormholeError/Code/corruptData`` saying what is malformed and at which object (also past the
    ///   limits on nesting, expansion and colliding keys, for a Foundation class Wormhole does not read, and
    ///   when a class's `init?(coder:)` fails), never a trap.
    public static func unarchivedObject(ofClasses classes: [AnyClass], from data: Data) throws -> Any? {
        try KeyedArchiveDecoder.decodeRoot([UInt8](data), allowed: AllowedClasses.cached(classes))
    }
}
