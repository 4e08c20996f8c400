/// What the bridge could not do, said plainly: a bad address or route, a server that refused it or spoke
/// garbage, a payload too large for the server.
public struct BridgeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
