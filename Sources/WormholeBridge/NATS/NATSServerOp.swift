import Foundation

/// One operation a server sends, whole, as ``NATSParser`` reads it.
enum NATSServerOp: Sendable, Equatable {
    /// INFO: the server describes itself (first, and again when its cluster changes).
    case info(NATSServerInfo)
    /// MSG or HMSG: a message on one of our subscriptions.
    case message(NATSMessage)
    /// PING: the server asks for a PONG, or it closes the connection as stale.
    case ping
    /// PONG: the answer to our PING.
    case pong
    /// +OK: an acknowledgement in verbose mode (we connect with verbose off, so rarely seen).
    case ok
    /// -ERR: the server's error, without its quotes ("Authorization Violation"). Most close the connection.
    case error(String)
}
