import Foundation

/// The coder handed to `init?(coder:)` of an `NSSecureCoding` class of the user's own: it serves the object's
/// fields from an archive that ``KeyedArchiveDecoder`` has already checked and decoded, so nothing a class asks
/// for reaches Foundation's unarchiver.
///
/// Every object a field refers to was decoded, and checked against the observer's allowed classes, before
/// `init?(coder:)` runs. `decodeObject(of:forKey:)` also checks the object against the classes asked for. A
/// missing key reads as nil, 0 or false, as with Foundation; a field of the wrong kind records an error (the
/// object is then refused whole), as does any method this coder does not serve (see ``StrictCoder``).
final class KeyedObjectDecoder: StrictCoder {
    private var fields: [String: CodedField]
    private let allowed: AllowedClasses
    /// The archived class name, for errors (not `className`: `NSObject` has one on macOS).
    private let archivedClass: String
    /// Whether the object's `init?(coder:)` is still running; calls after it returns are refused.
    private var open = true

    init(fields: [String: CodedField], allowed: AllowedClasses, className: String) {
        self.fields = fields
        self.allowed = allowed
        archivedClass = className
    }

    /// Ends the object: later calls, from a coder the class kept, record an error and read nothing.
    func close() {
        open = false
        fields = [:]
    }

    override func allowedClassList() -> [AnyClass]? { allowed.classes }

    override func containsValue(forKey key: String) -> Bool { open && fields[key] != nil }

    private func field(_ key: String) -> CodedField? {
        guard open else {
            fail("a coder of \(archivedClass) was used after init(coder:) returned")
            return nil
        }
        return fields[key]
    }

    override func decodeObject(forKey key: String) -> Any? {
        switch field(key) {
        case .object(let value)?: return value
        case nil: return nil
        default:
            fail("\(archivedClass).\(key) is not an object")
            return nil
        }
    }

    override func decodeObject(ofAnyOf classes: [AnyClass]?, forKey key: String) -> Any? {
        guard let value = decodeObject(forKey: key) else { return nil }
        guard let classes, AllowedClasses.value(value, isOneOf: classes) else {
            fail("\(archivedClass).\(key) is a \(type(of: value)), not one of the classes asked for")
            return nil
        }
        return value
    }

    override func decodeBool(forKey key: String) -> Bool {
        switch field(key) {
        case .bool(let flag)?: return flag
        case .integer(let number)?: return number != 0
        case nil: return false
        default:
            fail("\(archivedClass).\(key) is not a Bool")
            return false
        }
    }

    override func decodeInt64(forKey key: String) -> Int64 {
        switch field(key) {
        case .integer(let number)?: return number
        case .bool(let flag)?: return flag ? 1 : 0
        case .real(let number)?:
            guard let integer = Int64(exactly: number.rounded(.towardZero)) else {
                fail("\(archivedClass).\(key) holds \(number), outside the integers")
                return 0
            }
            return integer
        case .unsignedInteger(let number)?: return Int64(bitPattern: number)
        case nil: return 0
        default:
            fail("\(archivedClass).\(key) is not an integer")
            return 0
        }
    }

    override func decodeInt32(forKey key: String) -> Int32 {
        let number = decodeInt64(forKey: key)
        guard let narrow = Int32(exactly: number) else {
            fail("\(archivedClass).\(key) holds \(number), outside Int32")
            return 0
        }
        return narrow
    }

    override func decodeDouble(forKey key: String) -> Double {
        switch field(key) {
        case .real(let number)?: return number
        case .integer(let number)?: return Double(number)
        case .unsignedInteger(let number)?: return Double(number)
        case .bool(let flag)?: return flag ? 1 : 0
        case nil: return 0
        default:
            fail("\(archivedClass).\(key) is not a number")
            return 0
        }
    }

    override func decodeFloat(forKey key: String) -> Float { Float(decodeDouble(forKey: key)) }

    override func decodedBytes(forKey key: String) -> [UInt8]? {
        switch field(key) {
        case .bytes(let bytes)?: return bytes
        case nil: return nil
        default:
            fail("\(archivedClass).\(key) is not bytes")
            return nil
        }
    }
}
