import Foundation

/// A safe stand-in for `NSKeyedArchiver` and `NSKeyedUnarchiver` with secure coding, in their format.
///
/// Property-list values (String, Bool, integers, Double, Float, Date, Data, arrays, dictionaries, NSNull) are
/// written and read by Wormhole itself: fast, and checked on every byte, so no archive, however crafted, traps,
/// overflows the stack or expands without bound. Archives also holding `NSSecureCoding` classes of your own are
/// written by Foundation and read by Foundation only after the whole archive has been checked.
///
/// On Linux this matters beyond Wormhole: Foundation's unarchiver there traps on a class outside the allowed
/// set, crashes on several malformed archives, and misreads the ordinary string `"$null"`.
public enum SecureArchive {
    /// The keyed archive of `object`, readable by `NSKeyedUnarchiver` on any platform.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming where a value is neither a property-list value
    ///   nor `NSSecureCoding`, or nests deeper than 128 levels.
    public static func archivedData(withRootObject object: Any) throws -> Data {
        Data(try UserInfoEncoder.encode(root: object, maximumSize: .max))
    }

    /// Decodes an archive whose objects all belong to `classes` (or inherit from one of them).
    ///
    /// Decoded values are Swift's: `String`, `NSNumber` (which bridges to `Int`, `Double`, `Bool`), `Data`,
    /// `Date`, `[Any]`, `[AnyHashable: Any]`, `NSNull`, and instances of your own classes.
    /// - Returns: The root object, or nil when the archive's root is nil.
    /// - Throws: ``WormholeError/Code/disallowedClass`` for a class outside `classes`, and
    ///   ``WormholeError/Code/corruptData`` saying what is malformed and at which object, never a trap.
    public static func unarchivedObject(ofClasses classes: [AnyClass], from data: Data) throws -> Any? {
        try KeyedArchiveDecoder.decodeRoot([UInt8](data), allowed: AllowedClasses.cached(classes))
    }
}
