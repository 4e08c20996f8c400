import Foundation
import WormholeEngine

/// A typed request: a ``GroupMessage`` that a responder answers with a ``Reply``.
///
/// ```swift
/// struct CountUnread: GroupRequest {
///     typealias Reply = Int
///     static let name = Notification.Name("count.unread")
///     var folder: String
/// }
/// center.addResponder(for: CountUnread.self) { request in request.folder == "inbox" ? 3 : 0 }
/// let unread = try await center.request(CountUnread(folder: "inbox"), timeout: .seconds(2))
/// ```
/// It travels as an untyped request of its ``GroupMessage/name`` with its fields as the userInfo, and its reply
/// as a userInfo whose key `reply` holds the value, so untyped responders and requesters (`wormhole respond`,
/// `wormhole request`) take part too. In a target whose default isolation is the main actor, declare a reply type
/// of your own `nonisolated`, as ``GroupValue`` says.
public protocol GroupRequest: GroupMessage {
    /// What the responder answers.
    associatedtype Reply: Codable & Sendable
}

/// Turns replies into userInfo dictionaries and back, through property lists: `["reply": value]`.
enum ReplyCoding {
    static let key = "reply"

    private struct Box<Value: Codable>: Codable {
        let reply: Value
    }

    static func userInfo<R: GroupRequest>(of reply: R.Reply, for type: R.Type) throws(WormholeError) -> [AnyHashable: Any] {
        do {
            let data = try PropertyListEncoder().encode(Box(reply: reply))
            guard let dictionary = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
                throw WormholeError(.unsupportedValue, "the reply to \(R.name.rawValue) does not encode as a property list")
            }
            return dictionary
        } catch let error as WormholeError {
            throw error
        } catch {
            throw WormholeError(.unsupportedValue, "the reply to \(R.name.rawValue), a \(R.Reply.self), could not be encoded: \(error)")
        }
    }

    /// The reply in `userInfo`, already decoded and checked by Wormhole's own reader.
    /// - Throws: ``WormholeError/Code/responderFailed``, naming the type, when it holds no such reply.
    static func reply<R: GroupRequest>(for type: R.Type, from userInfo: [AnyHashable: Any]?) throws(WormholeError) -> R.Reply {
        guard let value = userInfo?[key] else {
            throw WormholeError(.responderFailed, "the reply to \(R.name.rawValue) holds no \"\(key)\": it is not a \(R.Reply.self)")
        }
        do {
            let data = try PropertyListSerialization.data(fromPropertyList: [key: value], format: .binary, options: 0)
            return try PropertyListDecoder().decode(Box<R.Reply>.self, from: data).reply
        } catch {
            throw WormholeError(.responderFailed, "the reply to \(R.name.rawValue) is not a \(R.Reply.self): \(error)")
        }
    }
}
