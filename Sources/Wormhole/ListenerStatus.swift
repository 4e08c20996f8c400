import Foundation
import WormholeEngine

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

    /// What a look at the container found of one listener, as a status.
    init(_ survey: ListenerSurvey) {
        let entry = survey.entry
        identifier = FileName.hex(entry.listener)
        clientIdentifier = entry.identity
        lastSeen = entry.isDurable ? Date(timeIntervalSince1970: Double(entry.lastSeen)) : nil
        pid = entry.pid
        socketPath = survey.socketPath
        transport = GroupNotificationCenter.Transport(entry.transport)
        switch survey.state {
        case .alive: state = .alive
        case .stopped: state = .stopped
        case .dead: state = .dead
        case .offline: state = .offline
        }
        spooledNotifications = survey.spooledNotifications
        spooledBytes = survey.spooledBytes
        subscriptions = entry.subscriptions
    }
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
        endpoint.listenerStatus().map(ListenerStatus.init)
    }
}
