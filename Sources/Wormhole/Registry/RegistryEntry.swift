/// One listening process in the registry: who it is, where its socket and spool are, and what it observes.
struct RegistryEntry: Hashable, Sendable {
    /// A random identity, fresh for every listener; names its socket and spool, so a reused pid is harmless.
    var listener: UInt64
    var pid: Int32
    var subscriptions: [Subscription]

    var socketName: String { Self.socketName(listener) }
    var spoolName: String { Self.spoolName(listener) }

    static func socketName(_ listener: UInt64) -> String { hex(listener) + ".socket" }
    static func spoolName(_ listener: UInt64) -> String { hex(listener) + ".spool" }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    func matches(name: String, object: String?) -> Bool {
        subscriptions.contains { $0.matches(name: name, object: object) }
    }
}
