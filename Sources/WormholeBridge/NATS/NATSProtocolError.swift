import Foundation

/// What was wrong with bytes of NATS's client protocol: bytes a server sent that the parser refuses, or a subject,
/// header or reply-to that the encoders refuse to write.
///
/// The message says what and how much ("control line over 4096 bytes"), for the bridge's log. A server's bytes
/// that raise one leave the parser unusable: the connection closes and starts again.
package struct NATSProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, in plain English.
    var message: String

    init(_ message: String) {
        self.message = message
    }

    init(message: String) {
        self.message = message
    }

    package var description: String { message }
}
