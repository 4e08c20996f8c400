import Foundation

/// What a request carries besides the asker's userInfo, in its userInfo under the key `wormhole.request`: its
/// id, where its reply goes, and how long it may still be answered.
///
/// The time left travels as a duration, never as a time of day: `remaining` is what was left when `stamp` was
/// read from this device's monotonic clock, which every process of the device shares and which no change of
/// the time of day moves. A responder subtracts what that clock has counted since: the time the request spent
/// in a socket or a spool. A stamp ahead of the clock (the device restarted since, or the stamp is forged)
/// leaves no time. Something that carries a request to another device sends the time left then, stamped anew.
package struct RequestEnvelope: Sendable {
    package static let key = "wormhole.request"
    /// The key of a reply's userInfo that says its responder failed, and why; a reply may not use it otherwise.
    package static let errorKey = "wormhole.error"
    /// The key of a reply's userInfo that says nobody answers where the request went (a bridge found no
    /// responder on any other host); a reply may not use it otherwise.
    package static let noResponderKey = "wormhole.noResponder"

    /// Random, 32 hex digits: what the reply's object carries back.
    package let id: String
    /// The notification name of the asking process's replies (``ReservedNames/replyPrefix``).
    package let replyTo: String
    /// Nanoseconds left when `stamp` was read; never more than ``Limits/maximumRequestTimeout``.
    let remaining: Int64
    /// This device's monotonic clock, in nanoseconds, when `remaining` was measured.
    let stamp: Int64

    package init(id: String, replyTo: String, remaining: Int64, stamp: Int64) {
        self.id = id
        self.replyTo = replyTo
        self.remaining = remaining
        self.stamp = stamp
    }

    /// The envelope a request's userInfo carries; nil when it has none, or one that is malformed: an id that is
    /// empty or too long, a reply name outside the reply prefix, a time or stamp that is not an integer. More
    /// time than ``Limits/maximumRequestTimeout`` is cut to it.
    package init?(_ userInfo: [AnyHashable: Any]?) {
        guard let fields = userInfo?[Self.key] as? [AnyHashable: Any],
            let id = fields["id"] as? String, !id.isEmpty, id.utf8.count <= Limits.maximumRequestIDLength,
            let replyTo = fields["replyTo"] as? String, ReservedNames.isReplyName(replyTo),
            let remaining = Self.integer(fields["remaining"]), let stamp = Self.integer(fields["stamp"])
        else { return nil }
        self.init(
            id: id, replyTo: replyTo, remaining: min(remaining, Interval(Limits.maximumRequestTimeout).signedNanoseconds),
            stamp: stamp)
    }

    /// The envelope as userInfo values.
    package var fields: [String: Any] {
        ["id": id, "replyTo": replyTo, "remaining": remaining, "stamp": stamp]
    }

    /// Nanoseconds left at `now` (this device's monotonic clock); zero or less once expired.
    package func remaining(at now: Int64) -> Int64 {
        guard stamp <= now else { return 0 }
        let (elapsed, overflow) = now.subtractingReportingOverflow(stamp)
        return overflow ? 0 : remaining - min(elapsed, remaining)
    }

    /// A decoded integer: an `Int`, an `Int64` or an `NSNumber` that is not a Boolean.
    private static func integer(_ value: Any?) -> Int64? {
        switch value {
        case let value as Int: Int64(value)
        case let value as Int64: value
        case let number as NSNumber where !(number is Bool): number.int64Value
        default: nil
        }
    }
}
