import Foundation

/// Where a NATS server listens, and how to sign in to it: from a URL such as `nats://host:4222`,
/// `nats://user:password@host:4222` or `nats://token@host:4222`.
public struct NATSServerAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    /// A user and password to sign in with, if the server asks for them.
    public var user: String?
    public var password: String?
    /// A token to sign in with, if the server asks for one.
    public var token: String?

    public init(host: String, port: UInt16 = 4222, user: String? = nil, password: String? = nil, token: String? = nil) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.token = token
    }

    /// The address a URL says: `nats://[user:password@ | token@]host[:port]` (port 4222 when none is given).
    /// - Throws: ``BridgeError`` when the URL is not a `nats` URL with a host.
    public init(url: URL) throws(BridgeError) {
        guard url.scheme?.lowercased() == "nats", let host = url.host, !host.isEmpty else {
            throw BridgeError("\(url.absoluteString) is not a nats:// URL with a host")
        }
        var port: UInt16 = 4222
        if let given = url.port {
            guard let valid = UInt16(exactly: given), valid > 0 else { throw BridgeError("port \(given) is out of range") }
            port = valid
        }
        // A user alone is a token, as NATS's own clients read it.
        let user = url.user?.removingPercentEncoding ?? url.user
        let password = url.password?.removingPercentEncoding ?? url.password
        if let user, password == nil {
            self.init(host: host, port: port, token: user)
        } else {
            self.init(host: host, port: port, user: user, password: password)
        }
    }

    /// The address without its secrets.
    public var description: String { "nats://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}
