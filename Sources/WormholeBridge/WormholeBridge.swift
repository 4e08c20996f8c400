import Foundation
import Synchronization
import Wormhole
import WormholeRelay

/// Carries notifications between the group on this host and the groups on other hosts, through a NATS server
/// with JetStream: one bridge per container on each host, all connected to one server or to servers of one
/// cluster.
///
/// ```swift
/// let bridge = try WormholeBridge(
///     containerURL: URL(fileURLWithPath: "/var/lib/myapp/group"),
///     server: NATSServerAddress(url: URL(string: "nats://127.0.0.1:4222")!),
///     routes: [.notifications(named: "cart.changed"), .notifications(prefixed: "jobs.")])
/// bridge.start()
/// ```
///
/// A notification posted under a routed name on any host reaches every matching observer on every other host
/// once, in its poster's order, also when it was posted while the bridge, the server or the other host was down:
/// the bridge is a durable listener of its group (client identifier `wormhole.bridge` unless given another), so
/// what is posted while it is not running waits in its spool; what it took waits in its outbox in the container
/// until the server has stored it in the stream; each host has a durable consumer there, whose messages are
/// acknowledged only once posted into the host's group, and the bridge remembers per host what it posted, so
/// that a message handed over again is dropped. What the bridge posts carries the relay's mark and is never sent
/// back. Routed requests cross to the hosts whose registries list a responder for them, and their first reply
/// comes back.
public final class WormholeBridge: Sendable {
    /// The client identifier of the bridge's center, unless another is given.
    public static let defaultClientIdentifier = "wormhole.bridge"

    /// How the bridge uses the server.
    public struct Options: Sendable, Hashable {
        /// What every subject and the stream's name start with: bridges of one application share it, and
        /// another application on the same server picks another. Dot-separated tokens of letters, digits, `-`
        /// and `_`.
        public var subjectPrefix = "wormhole"
        /// How many servers of a cluster keep the stream (1, 3 or 5): made so when the stream is first made.
        public var replicas = 1
        /// How long the stream keeps a notification that some host has not taken yet: a host away longer misses
        /// it.
        public var maximumAge: Duration = .seconds(7 * 24 * 3600)
        /// How long the server remembers a message's id, so that one published again (its bridge stopped before
        /// the server's answer came) is stored once.
        public var duplicateWindow: Duration = .seconds(120)
        /// How long a connection, a sign-in or a request to the server may take.
        public var timeout: Duration = Limits.bridgeRequestTimeout

        public init() {}
    }

    private let center: GroupNotificationCenter
    private let session: BridgeSession
    private let outbound: BridgeOutbound
    private let entries: BridgeEntries
    private let requests: BridgeRequests
    private let routes: RelayRoutes
    private let key: String
    private let tokens = Mutex<[any NSObjectProtocol]?>(nil)

    /// A bridge between `containerURL`'s group and the groups of the other hosts whose bridges use `server`.
    /// Nothing moves until ``start()``.
    /// - Parameters:
    ///   - containerURL: The group's container.
    ///   - server: The NATS server (with JetStream) to connect to, and how to sign in.
    ///   - routes: What crosses, and which way (``RelayRoute``): notifications of a name or a prefix, retained
    ///     notifications, group values, and requests: a request made on this host reaches the responders of
    ///     other hosts (through NATS's request and reply, not the stream), and one that no host answers fails
    ///     with `noResponder` at once.
    ///   - options: The subject prefix, the stream's replicas and limits.
    ///   - clientIdentifier: The bridge's durable identity in the group; one bridge per container.
    /// - Throws: ``BridgeError`` for a bad subject prefix;
    ///   ``Wormhole/WormholeError/Code/identityInUse`` when another bridge runs on the container with this client
    ///   identifier; the errors of ``Wormhole/GroupNotificationCenter/init(containerURL:clientIdentifier:)``;
    ///   ``Wormhole/WormholeError/Code/invalidContainer`` when `bridge/`, its folder or `outbox/` in the container
    ///   is a symbolic link or not a directory: the bridge reaches its files only through its own folders.
    public init(
        containerURL: URL, server: NATSServerAddress, routes: [RelayRoute], options: Options = Options(),
        clientIdentifier: String = WormholeBridge.defaultClientIdentifier
    ) throws {
        let subjects = try BridgeSubjects(prefix: options.subjectPrefix)
        let center = try GroupNotificationCenter(relayContainerURL: containerURL, clientIdentifier: clientIdentifier)
        let container = try center.containerFolder()
        let key = "\(container.identity):\(clientIdentifier)"
        self.key = key
        guard Self.claims.withLock({ $0.insert(key).inserted }) else {
            throw WormholeError(.identityInUse, "a bridge of this process runs on \(containerURL.path) as \(clientIdentifier)")
        }
        do {
            let folder = try container.folder("bridge", create: true).folder(
                WormholeRelay.folderName(clientIdentifier), create: true)
            folder.removeTemporaries()
            let stateFile = StateFile(folder: folder, name: "state", limit: Limits.relayStateFileSize)
            var (state, _) = BridgeState.load(from: stateFile)
            var postedLog = PostedLog(folder: folder)
            for record in postedLog.records(log: BridgeLog.write) {
                _ = state.posted.advance(poster: record.poster, sequence: record.sequence)
            }
            let outbox = try Outbox(folder: try folder.folder("outbox", create: true), log: BridgeLog.write)
            state.nextLink = max(state.nextLink, outbox.highest + 1)
            for item in outbox.ordered where item.skipped != true {
                _ = state.sent.advance(poster: item.poster, sequence: item.sequence)
            }
            try state.save(to: stateFile)
            postedLog.clear()

            let routes = RelayRoutes(routes)
            let outbound = BridgeOutbound(outbox: outbox, nextLink: state.nextLink, sent: state.sent)
            let inbound = BridgeInbound(
                posted: state.posted, postedLog: postedLog, streamApplied: state.streamApplied,
                streamCreated: state.streamCreated, center: center, routes: routes, subjects: subjects, device: state.device)
            let device = state.device
            let ledger = EntryLedger(
                entries: state.entries ?? [:], center: center, routes: routes, device: device, other: "another host",
                log: BridgeLog.write)
            let entries = BridgeEntries(ledger: ledger, routes: routes)
            let requests = BridgeRequests(
                center: center, containerURL: containerURL, routes: routes, subjects: subjects, device: device)
            let saving = Mutex<Void>(())
            session = BridgeSession(
                server: server, subjects: subjects, options: options, outbound: outbound, inbound: inbound,
                entries: entries, requests: requests, device: device
            ) {
                try saving.withLock { _ in
                    var state = BridgeState(device: device)
                    outbound.record(into: &state)
                    inbound.record(into: &state)
                    state.entries = ledger.recorded
                    try state.save(to: stateFile)
                }
            }
            self.entries = entries
            self.requests = requests
            self.outbound = outbound
            self.routes = routes
            self.center = center
        } catch {
            _ = Self.claims.withLock { $0.remove(key) }
            throw error
        }
    }

    deinit {
        close()
    }

    /// The bridges of this process, by container and client identifier.
    private static let claims = Mutex<Set<String>>([])

    /// Starts taking what this group posts under the routes and posting what the other hosts send. Calling it
    /// again, or after ``close()``, does nothing.
    public func start() {
        tokens.withLock { tokens in
            guard tokens == nil else { return }
            let outbound = self.outbound
            let routes = self.routes
            let requests = self.requests
            var observers: [GroupNotificationCenter.RelayObserver] = routes.observedNames.map { name in
                (name, { note in
                    switch routes.outgoing(note) {
                    case .notification:
                        do {
                            try outbound.keep(note)
                        } catch {
                            BridgeLog.write("\(note.name) not kept in the outbox: \(error)")
                        }
                    case .request: requests.take(note)
                    case .reply, nil: break
                    }
                })
            }
            // A retained notification or a group value changed here: looked at before the next publish.
            let entries = self.entries
            for entry in routes.sentEntries {
                let name = entry.kind == .value ? GroupNotificationCenter.valueNotificationName(for: entry.name) : entry.name
                observers.append((name, { note in
                    guard !note.isRelayed else { return }
                    entries.changed()
                    outbound.bell.signal()
                }))
            }
            tokens = center.addRelayObservers(observers)
            center.deliverSpooledNotifications()
            session.start()
        }
    }

    /// Stops taking and posting. What waits stays in the container for the next start, and so does what this
    /// group posts under the bridge's names meanwhile.
    public func close() {
        // Nil before the start, empty once closed.
        let removed = tokens.withLock { tokens -> [any NSObjectProtocol]? in
            defer { tokens = [] }
            return tokens
        }
        // Its names stay registered: what is posted until the next start waits in its spool.
        if let removed, !removed.isEmpty { center.removeRelayObservers(removed) }
        session.close()
        requests.close()
        _ = Self.claims.withLock { $0.remove(key) }
    }

    /// What the bridge is doing now.
    public var status: BridgeStatus { session.status }
}
