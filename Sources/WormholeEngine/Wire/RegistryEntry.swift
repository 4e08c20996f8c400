/// One listening process in the registry: who it is, where its socket and spool are, and what it observes.
package struct RegistryEntry: Hashable, Sendable {
    /// A random identity, fresh for every listener; names its socket and spool, so a reused pid is harmless.
    /// A durable listener's is derived from its client identifier instead, so each of its runs finds its spool.
    package var listener: UInt64
    package var pid: Int32
    package var subscriptions: [Subscription]
    /// The client identifier of a durable listener, which keeps its entry and spool while no process runs it.
    package var identity: String? = nil
    /// When a durable listener's process last registered or left, in seconds since 1970.
    package var lastSeen: Int64 = 0
    /// The socket it listens on; posters speak this transport to it.
    package var transport: SocketKind = .sequencedPacket

    package init(
        listener: UInt64, pid: Int32, subscriptions: [Subscription], identity: String? = nil, lastSeen: Int64 = 0,
        transport: SocketKind = .sequencedPacket
    ) {
        self.listener = listener
        self.pid = pid
        self.subscriptions = subscriptions
        self.identity = identity
        self.lastSeen = lastSeen
        self.transport = transport
    }

    package var isDurable: Bool { identity != nil }

    /// Whether posters put everything for it in its spool, never in its socket (``ReservedNames/keepsSpooled``).
    package var keepsSpooled: Bool { subscriptions.contains { $0.name == ReservedNames.keepsSpooled } }

    /// The listener id of a durable identity: a 64-bit FNV-1a hash of it, never zero.
    static func durableListener(_ identity: String) -> UInt64 {
        let hash = FileName.fnv1a("durable:\(identity)".utf8)
        return hash == 0 ? 1 : hash
    }

    package var socketName: String { Self.socketName(listener) }
    var spoolName: String { Self.spoolName(listener) }
    /// Its file in `registry/`.
    package var fileName: String { FileName.hex(listener) }

    package static func socketName(_ listener: UInt64) -> String { FileName.hex(listener) + ".socket" }
    /// Its folder in `spool/`.
    package static func spoolName(_ listener: UInt64) -> String { FileName.hex(listener) }

    package func matches(name: String, object: String?) -> Bool {
        subscriptions.contains { $0.matches(name: name, object: object) }
    }
}
