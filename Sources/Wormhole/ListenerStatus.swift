import Foundation

/// One listening process as the registry records it, and what the system says of it now.
public struct ListenerStatus: Sendable, Hashable {
    /// Whether the listener can take notifications now.
    public enum State: String, Sendable, Hashable {
        /// Its socket takes messages and its process runs.
        case alive
        /// Its process is stopped (SIGSTOP, a debugger): posts go to its socket buffer, then its spool.
        case stopped
        /// Nobody listens on its socket: the next post that reaches it removes it.
        case dead
        /// A durable identity that no process runs now: posts for it collect in its spool.
        case offline
    }

    /// The listener's identity, which names its socket and spool.
    public var identifier: String
    /// A durable listener's client identifier; nil for an ephemeral one.
    public var clientIdentifier: String?
    /// When a durable identity last started or stopped running.
    public var lastSeen: Date?
    /// The listening process's id as its registry entry records it; 0 for a durable identity no process runs.
    public var pid: Int32
    /// The socket's path.
    public var socketPath: String
    /// The socket it listens on, which posters speak to it.
    public var transport: GroupNotificationCenter.Transport
    /// The (name, object) pairs it observes; nil means any.
    public var observing: [(name: String?, object: String?)] {
        subscriptions.map { ($0.name, $0.object) }
    }
    /// Whether it can take notifications now, as found when the status was read.
    public var state: State
    /// Notifications waiting in its spool.
    public var spooledNotifications: Int
    /// The bytes its spool folder holds.
    public var spooledBytes: Int

    var subscriptions: [Subscription]
}

extension GroupNotificationCenter {
    /// Removes the listeners found dead now (nobody listens on their socket: the process is gone) with their
    /// socket files and spools, as the next post that reaches them would. A durable identity, a stopped
    /// listener and one whose backlog is full are never removed. Meant for tools.
    /// - Returns: How many were removed.
    @discardableResult
    public func removeGoneListeners() -> Int {
        let gone = listenerStatus().filter { $0.state == .dead }.compactMap { FileName.value(ofHex: $0.identifier) }
        endpoint.removeListeners(gone)
        return gone.count
    }

    /// Forgets the durable identity `clientIdentifier`: its registry entry and its spool, with what is spooled for
    /// it. Meant for tools.
    /// - Parameter clientIdentifier: The identity to forget.
    /// - Returns: Whether there was one.
    /// - Throws: ``WormholeError/Code/identityInUse`` while a process runs it (or is stopped in it).
    @discardableResult
    public func forgetDurableIdentity(_ clientIdentifier: String) throws -> Bool {
        guard let status = listenerStatus().first(where: { $0.clientIdentifier == clientIdentifier }),
            let listener = FileName.value(ofHex: status.identifier)
        else { return false }
        guard status.state == .offline else {
            throw WormholeError(.identityInUse, "client identifier \"\(clientIdentifier)\" is run by process \(status.pid) (\(status.state))")
        }
        endpoint.removeListeners([listener])
        return true
    }

    /// Every listener in the registry, with its state and spool depth. Reads files; meant for tools.
    /// - Returns: One status per registry entry, durable identities that no process runs included.
    public func listenerStatus() -> [ListenerStatus] {
        let container = endpoint.container
        return endpoint.registry.snapshot().entries.map { entry in
            var state: ListenerStatus.State
            switch ListenerProbe.probe(entry, in: container) {
            case .listening: state = .alive
            case .gone: state = .dead
            // A full backlog: it is not reading.
            case .busy, .unknown: state = .stopped
            }
            if state == .alive && ProcessState.of(entry.pid) == .stopped { state = .stopped }
            if state == .dead && entry.isDurable { state = .offline }
            let (spooledNotifications, spooledBytes) = Self.spoolDepth(of: entry.listener, in: container)
            return ListenerStatus(
                identifier: FileName.hex(entry.listener), clientIdentifier: entry.identity,
                lastSeen: entry.isDurable ? Date(timeIntervalSince1970: Double(entry.lastSeen)) : nil, pid: entry.pid,
                socketPath: container.listenersPath + "/" + entry.socketName, transport: Transport(entry.transport), state: state,
                spooledNotifications: spooledNotifications, spooledBytes: spooledBytes,
                subscriptions: entry.subscriptions)
        }
    }

    /// How many notifications wait in a listener's spool folder, and its bytes; reads the folder, for tools.
    private static func spoolDepth(of listener: UInt64, in container: Container) -> (Int, Int) {
        guard let folder = try? SpoolFolder(listener: listener, in: container, create: false) else { return (0, 0) }
        let names = (try? Sys.listDirectory(folder.descriptor)) ?? []
        var count = 0
        for name in names where name.hasSuffix(SpoolFolder.segmentSuffix) || name.hasSuffix(SpoolFolder.takenSuffix)
            || name.hasPrefix(SpoolFolder.heldPrefix)
        {
            _ = folder.readSegment(name) { _ in count += 1 }
        }
        return (count, folder.totalBytes())
    }
}
