import Foundation

/// A message the server delivered on a subscription (MSG, or HMSG when it has headers).
package struct NATSMessage: Sendable, Equatable {
    /// The subject it was published to. The server passes on any subject another client published, control
    /// characters and bytes that are not UTF-8 included (those read as U+FFFD): check it before trusting it.
    var subject: String
    /// The subscription it came through: ours are numbers, so anything else is a protocol error.
    var sid: UInt64
    /// Where an answer goes, nil when the publisher expects none.
    var replyTo: String?
    /// The headers of an HMSG, nil for MSG, and for an HMSG whose headers do not read (see ``headerError``).
    var headers: NATSHeaders?
    /// The bytes after the headers.
    var payload: [UInt8]
    /// Why the headers of an HMSG did not read; nil otherwise.
    ///
    /// The server passes on another client's header bytes unchecked (nats-server 2.9.10 delivers `HPUB s 5 7`
    /// with `abcde` as its headers). The message's length framed them, so the stream is still in step: such a
    /// message is delivered with this set rather than closing the connection, which anyone allowed to publish on
    /// the subject could otherwise do at will (and, through JetStream's redelivery, again and again).
    var headerError: NATSProtocolError? = nil
}
