import Foundation

/// The identities of the concrete types userInfo values most often have, compared before any dynamic cast by
/// the encoders: a failed cast costs more than the comparison.
enum ValueType {
    static let string = ObjectIdentifier(String.self)
    static let int = ObjectIdentifier(Int.self)
    static let double = ObjectIdentifier(Double.self)
    static let bool = ObjectIdentifier(Bool.self)
    static let data = ObjectIdentifier(Data.self)
    static let stringDictionary = ObjectIdentifier([String: Any].self)
    static let dictionary = ObjectIdentifier([AnyHashable: Any].self)
    static let array = ObjectIdentifier([Any].self)
}
