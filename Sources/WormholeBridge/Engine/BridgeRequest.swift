import Foundation
import WormholeRelay

/// A request as it crosses to other hosts: its name (without the request prefix), sender tag, userInfo archive
/// (with the requester's envelope) and the nanoseconds it had left when published. Time crosses as time left:
/// each host's monotonic clock is its own.
struct BridgeRequest: Codable, Sendable {
    var name: String
    var object: String?
    var userInfo: Data
    var remaining: Int64

    init(name: String, object: String?, userInfo: [UInt8], remaining: Int64) {
        self.name = name
        self.object = object
        self.userInfo = Data(userInfo)
        self.remaining = remaining
    }

    /// The request `payload` holds.
    /// - Throws: When it is not one (a property list of these fields).
    init(_ payload: [UInt8]) throws {
        self = try StrictPropertyList.decode(Self.self, from: payload)
    }

    /// The message's payload: a binary property list.
    func encoded() throws(BridgeError) -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        do {
            return Array(try encoder.encode(self))
        } catch {
            throw BridgeError("request \(name) cannot be encoded: \(error)")
        }
    }
}
