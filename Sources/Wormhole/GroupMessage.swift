import Foundation
import WormholeEngine

/// A typed notification: a `Codable` value that travels as an ordinary notification of its ``name``, with its
/// fields as the userInfo, so untyped observers and `wormhole listen` see it too.
///
/// ```swift
/// struct CartChanged: GroupMessage {
///     static let name = Notification.Name("cart.changed")
///     var itemIDs: [Int]
/// }
/// center.post(CartChanged(itemIDs: [3, 4, 10]))
/// center.addObserver(for: CartChanged.self) { message in print(message.itemIDs) }
/// ```
/// The value must encode as a keyed container (a struct or class with properties), since its fields become
/// the userInfo dictionary.
public protocol GroupMessage: Codable, Sendable {
    /// The name the message travels under.
    static var name: Notification.Name { get }
}

/// Turns messages into userInfo dictionaries and back, through property lists.
enum MessageCoding {
    static func userInfo(of message: some GroupMessage) throws(WormholeError) -> [AnyHashable: Any] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        do {
            let data = try encoder.encode(message)
            guard let dictionary = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
                throw WormholeError(.unsupportedValue, "\(type(of: message)) does not encode as a keyed container")
            }
            return dictionary
        } catch let error as WormholeError {
            throw error
        } catch {
            throw WormholeError(.unsupportedValue, "\(type(of: message)) could not be encoded: \(error)")
        }
    }

    /// The message in `userInfo`, already decoded and checked by Wormhole's own reader.
    static func message<M: GroupMessage>(_ type: M.Type, from userInfo: [AnyHashable: Any]?) throws(WormholeError) -> M {
        var dictionary: [String: Any] = [:]
        for (key, value) in userInfo ?? [:] {
            guard let name = key.base as? String else {
                throw WormholeError(.corruptData, "userInfo of \(M.name.rawValue) has a key that is not a String")
            }
            dictionary[name] = value
        }
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)
            return try PropertyListDecoder().decode(M.self, from: data)
        } catch {
            throw WormholeError(.corruptData, "userInfo of \(M.name.rawValue) is not a \(M.self): \(error)")
        }
    }
}
