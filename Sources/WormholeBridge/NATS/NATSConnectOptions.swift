import Foundation

/// What CONNECT says besides the fixed parts: the client's name, its credentials, and whether it wants to
/// receive what it publishes itself.
struct NATSConnectOptions: Sendable {
    /// The connection's name, shown by the server's monitoring.
    var name: String?
    /// A user name, sent with ``password`` as `user` and `pass`.
    var user: String?
    /// The user's password.
    var password: String?
    /// A token, sent as `auth_token`.
    var token: String?
    /// Whether the server delivers our own messages to our own subscriptions.
    var echo = true

    init(name: String? = nil, user: String? = nil, password: String? = nil, token: String? = nil, echo: Bool = true) {
        self.name = name
        self.user = user
        self.password = password
        self.token = token
        self.echo = echo
    }
}
