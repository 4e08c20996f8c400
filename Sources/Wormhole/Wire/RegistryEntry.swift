/// One listening process in the registry: who it is, where its socket and spool are, and what it observes.
struct RegistryEntry: Hashable, Sendable {
    /// A random identity, fresh for every listener; names its socket and spool, so a reused pid is harmless.
    /// A durable listener's is derived from its client identifier instead, so each of its runs finds its spool.
    var listener: UInt64
    var pid: Int32
    var subscriptions: [Subscription]
    /// The client identifier of a durable listener, which keeps its entry and spool while no process runs it.
    var identity: String? = nil
    /// When a durable listener's process last registered or left, in seconds since 1970.
    var lastSeen: Int64 = 0
    /// The socket it listens on; posters speak this transport to it.
    var transport: SocketKind = .sequencedPacket

    var isDurable: Bool { identity != nil }

    /// Whether posters put everything for it in its spool, never in its socket (``ReservedNames/keepsSpooled``).
    var keepsSpooled: Bool { subscriptions.contains { $0.name == ReservedNames.keepsSpooled } }

    /// The listener id of a durable identity: a 64-bit FNV-1a hash of it, never zero.
    static func durableListener(_ identity: String) -> UInt64 {
        let hash = FileName.fnv1a("durable:\(identity)".utf8)
        return hash == 0 ? 1 : hash
    }

    var socketName: String { Self.socketName(listener) }
    var spoolName: String { Self.spoolName(listener) }
    /// Its file in `registry/`.
    var fileName: String { FileName.hex(listener) }

    static func socketName(_ listener: UInt64) -> String { FileName.hex(listener) + ".socket" }
    /// Its folder in `spool/`.
    static func spoolName(_ listener: UInt64) -> String { FileName.hex(listener) }

    func matches(name: String, object: String?) -> Bool {
        subscriptions.contains { $0.matches(name: name, object: object) }
    }
}
