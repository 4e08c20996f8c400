import Foundation
import Wormhole

/// What one relay hands the other over the link, in any channel: notifications taken from its group, what it
/// has applied of the other's, and (in the context) its retained notifications and group values.
///
/// Encoded as a binary property list. Every field is checked by the receiver: a payload that does not decode,
/// or holds what this side refuses, is dropped, logged and counted (``RelayStatus/dropped``).
struct RelayEnvelope: Codable, Sendable {
    /// The format this version writes and reads; another is dropped.
    static let currentFormat = 1
    static let maximumSize = Limits.relayPayloadSize

    var format = RelayEnvelope.currentFormat
    /// The device that sent it (``RelayState/device``).
    var device: UInt64
    /// The sender's run: a context from a new run differs from the last even when nothing else does.
    var session: UInt64
    /// Notifications, in the order of their link sequence.
    var items: [RelayItem] = []
    /// What the sender has applied of the receiver's notifications.
    var ack: Acknowledgement?
    /// The sender's retained notifications and group values (in a context).
    var entries: [SyncedEntry.Content]?

    func encoded() throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return try encoder.encode(self)
    }

    /// Decodes and checks a payload.
    static func decode(_ payload: Data) throws -> RelayEnvelope {
        guard payload.count <= maximumSize else {
            throw RelayLinkError(.payloadTooLarge, "a payload of \(payload.count) bytes, over \(maximumSize)")
        }
        let envelope = try StrictPropertyList.decode(RelayEnvelope.self, from: payload)
        guard envelope.format == currentFormat else {
            throw RelayLinkError(.failed, "a payload of format \(envelope.format); this version reads \(currentFormat)")
        }
        return envelope
    }
}

/// One notification as it crosses: its place in the sender's outbox, and the post it was on its device.
package struct RelayItem: Codable, Sendable, Hashable {
    /// Its number in the sender's outbox: 1, 2, 3… for each device, applied in this order.
    package var link: UInt64
    package var poster: UInt64
    package var sequence: UInt64
    package var name: String
    package var object: String?
    package var userInfo: Data?
    /// Set for a notification the sender could not carry (too large, a request expired): the receiver only
    /// moves past it.
    package var skipped: Bool?
    /// A request's deadline on the sending device's monotonic clock (nanoseconds): kept in the outbox only.
    package var deadline: Int64?
    /// A request's time left when it was handed to the link (nanoseconds): what the receiver stamps anew.
    package var remaining: Int64?

    package init(
        link: UInt64, poster: UInt64, sequence: UInt64, name: String, object: String? = nil, userInfo: Data? = nil,
        skipped: Bool? = nil, deadline: Int64? = nil, remaining: Int64? = nil
    ) {
        self.link = link
        self.poster = poster
        self.sequence = sequence
        self.name = name
        self.object = object
        self.userInfo = userInfo
        self.skipped = skipped
        self.deadline = deadline
        self.remaining = remaining
    }
}

/// "I have applied your notifications up to `link`", to the device `device`.
struct Acknowledgement: Codable, Sendable, Hashable {
    var device: UInt64
    var link: UInt64
}

/// An order both devices agree on for writes of one retained name or group value: the wall-clock time the relay
/// on the writer's device saw the write (milliseconds), the device's id breaking ties.
package struct Stamp: Codable, Sendable, Hashable, Comparable {
    package var time: UInt64
    package var device: UInt64

    package init(time: UInt64, device: UInt64) {
        self.time = time
        self.device = device
    }

    package static let zero = Stamp(time: 0, device: 0)

    package static func < (a: Stamp, b: Stamp) -> Bool { (a.time, a.device) < (b.time, b.device) }
}

/// A retained name or group value a relay keeps the same on both devices.
package struct SyncedEntry: Codable, Sendable, Hashable {
    package enum Kind: String, Codable, Sendable {
        case retained
        case value
    }

    package var kind: Kind
    package var name: String

    package init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }

    /// Its key in the relay's state.
    package var key: String { "\(kind.rawValue):\(name)" }

    /// The entry as a relay hands it over: the latest write, stamped.
    package struct Content: Codable, Sendable, Hashable {
        package var entry: SyncedEntry
        package var stamp: Stamp
        /// Whether there is a value (false: the retained notification was cleared, the value reset).
        package var present: Bool
        package var object: String?
        /// The userInfo archive: a retained notification's, or a group value's.
        package var archive: Data?

        package init(entry: SyncedEntry, stamp: Stamp, present: Bool, object: String? = nil, archive: Data? = nil) {
            self.entry = entry
            self.stamp = stamp
            self.present = present
            self.object = object
            self.archive = archive
        }
    }
}
