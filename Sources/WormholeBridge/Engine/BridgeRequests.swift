import Foundation
import Synchronization
import Wormhole
import WormholeEngine
import WormholeRelay

/// Requests across hosts, through NATS's own request and reply rather than the stream: a request lives only as
/// long as its requester waits, and the server says at once when nobody subscribes to its subject.
///
/// This host's requests: the bridge observes each routed request name in its group, so a requester here reaches
/// it, and publishes each request it takes under ``BridgeSubjects/request(for:object:)``, its reply due in an
/// inbox of the connection's. The first reply is posted back to the requester; the server's "no responders" is
/// posted as a reply that says so, and the requester fails with `noResponder` once every listener it reached
/// (the bridge, and responders of this host) has said so or answered.
///
/// Other hosts' requests: the bridge subscribes to the subjects of the responders the registry lists here, relays
/// and bridges left out (looked at on each connection and each second), posts each request it receives into the group, stamped anew with its
/// time left, opens the way back of its replies (``RelayReplyRoutes``), and publishes the first reply to the
/// requester's inbox.
final class BridgeRequests: Sendable {
    /// A request of this host, published, waiting for its reply.
    private struct Outgoing {
        let id: String
        let replyTo: String
        let name: String
        let until: Int64
        /// The request as taken, when it waited for a connection: published again rather than declined while
        /// other hosts' bridges may still be connecting (``Limits/bridgeReconnectGrace``).
        let waited: RelayedNotification?
    }

    /// A request from another host, posted here, waiting for this host's first reply.
    private struct Incoming {
        let inbox: String
        /// The reply name its way back observes.
        let replyTo: String
        let until: Int64
    }

    private struct State {
        var connection: NATSConnection?
        /// Where replies to this connection's requests come: `<inbox>.<token>`.
        var inbox: String?
        var nextToken: UInt64 = 0
        var outgoing: [UInt64: Outgoing] = [:]
        /// This host's requests taken while not connected, in order.
        var waiting: [RelayedNotification] = []
        /// Requests that waited for the connection and that no host answered yet, to publish again at the next
        /// look: other hosts' bridges may connect later than this one.
        var again: [RelayedNotification] = []
        /// When this connection began (this device's monotonic clock).
        var connectedAt: Int64 = 0
        /// Other hosts' requests, by id.
        var incoming: [String: Incoming] = [:]
        /// How many of `incoming` use each way back (a requester's reply name): it closes when none does.
        var uses: [String: Int] = [:]
        /// The responders' subjects subscribed to on this connection, and their subscriptions.
        var subscribed: [String: UInt64] = [:]
        var lastLook: Int64 = 0
    }

    /// What the requests did, for the bridge's status.
    struct Counts: Sendable {
        var sent = 0
        var answered = 0
        var dropped = 0
    }

    private let state = Mutex(State())
    private let center: GroupNotificationCenter
    private let routes: RelayRoutes
    private let subjects: BridgeSubjects
    private let device: UInt64
    private let ways: RelayReplyRoutes
    /// What every message the bridge sends for requests carries: this host's id.
    private let headers: NATSHeaders
    private let counts = Mutex(Counts())

    init(
        center: GroupNotificationCenter, containerURL: URL, routes: RelayRoutes, subjects: BridgeSubjects,
        device: UInt64
    ) {
        self.center = center
        self.routes = routes
        self.subjects = subjects
        self.device = device
        ways = RelayReplyRoutes(containerURL: containerURL)
        var headers = NATSHeaders()
        // A host id in hexadecimal is always a field NATS takes.
        try? headers.set(BridgeHeaders.host, String(device, radix: 16))
        self.headers = headers
        ways.deliver { [weak self] reply in self?.sendBack(reply) }
    }

    /// Whether the routes carry requests at all.
    var isEmpty: Bool { !routes.carriesRequests }

    // MARK: The connection

    /// Starts using `connection`: its inbox for replies, the responders' subscriptions, and the requests taken
    /// while there was none.
    func connected(_ connection: NATSConnection) throws(BridgeError) {
        guard !isEmpty else { return }
        let inbox = "_INBOX." + String(UInt64.random(in: 1...UInt64.max), radix: 16) + String(UInt64.random(in: 1...UInt64.max), radix: 16)
        _ = try connection.subscribe(inbox + ".*") { [weak self] message in self?.answer(message) }
        let waiting = state.withLock { state -> [RelayedNotification] in
            state.connection = connection
            state.inbox = inbox
            state.connectedAt = GroupNotificationCenter.uptimeNanoseconds
            state.subscribed = [:]
            state.lastLook = 0
            defer { state.waiting = [] }
            return state.waiting
        }
        look()
        // The server has taken the subscriptions once it answers: a request from another host then finds them.
        do throws(BridgeError) {
            try connection.roundTrip(timeout: Limits.bridgeRequestTimeout)
        } catch {
            // The requests that waited wait on, for the next connection.
            state.withLock { $0.waiting = waiting + $0.waiting }
            throw error
        }
        for note in waiting { take(note, waited: true) }
    }

    /// Stops using the connection, which ended: replies due on it cannot come, so those requesters time out.
    func disconnected() {
        state.withLock { state in
            state.connection = nil
            state.inbox = nil
            state.subscribed = [:]
            state.outgoing = [:]
            state.waiting = state.again + state.waiting
            state.again = []
        }
    }

    /// Once a second at most: looks at which requests this host answers, and forgets what is past its time.
    func tick() {
        guard !isEmpty else { return }
        let now = GroupNotificationCenter.uptimeNanoseconds
        let due = state.withLock { state -> [RelayedNotification]? in
            guard now - state.lastLook >= Int64(Limits.bridgeStateSaveInterval / .nanoseconds(1)) else { return nil }
            state.outgoing = state.outgoing.filter { $0.value.until > now }
            state.incoming = state.incoming.filter { $0.value.until > now }
            state.uses = state.incoming.values.reduce(into: [:]) { $0[$1.replyTo, default: 0] += 1 }
            state.waiting.removeAll { note in
                guard let archive = note.userInfo, let address = GroupNotificationCenter.requestAddress(archive) else { return true }
                return address.remaining <= 0
            }
            defer { state.again = [] }
            return state.again
        }
        guard let again = due else { return }
        ways.closeExpired(now: now)
        look()
        for note in again { take(note, waited: true) }
    }

    /// Subscribes to the subjects of the requests this host answers now, and ends the subscriptions of those it
    /// no longer does.
    private func look() {
        let now = GroupNotificationCenter.uptimeNanoseconds
        var wanted = Set<String>()
        let routed = center.responders().filter {
            routes.incoming(GroupNotificationCenter.requestName(for: $0.name)) == .request
        }
        // A name that a responder answers from every sender has its subjects cover those of each sender: both
        // subscribed, the server would hand a request to this connection twice, and it would be posted twice.
        let everySender = Set(routed.lazy.filter { $0.object == nil }.map(\.name))
        for responder in routed where responder.object == nil || !everySender.contains(responder.name) {
            for subject in subjects.responder(for: responder.name, object: responder.object)
            where subject.utf8.count <= Limits.natsLongestSubject {
                wanted.insert(subject)
            }
        }
        guard let (connection, current) = state.withLock({ state -> (NATSConnection, [String: UInt64])? in
            state.lastLook = now
            return state.connection.map { ($0, state.subscribed) }
        }) else { return }
        var subscribed = current
        do throws(BridgeError) {
            for (subject, sid) in current where !wanted.contains(subject) {
                try connection.unsubscribe(sid)
                subscribed[subject] = nil
            }
            for subject in wanted where current[subject] == nil {
                subscribed[subject] = try connection.subscribe(subject) { [weak self] message in self?.serve(message) }
            }
        } catch {
            connection.close(error)
        }
        state.withLock { state in
            if state.connection === connection { state.subscribed = subscribed }
        }
    }

    // MARK: This host's requests

    /// Publishes a request a requester of this group made, or keeps it until connected; drops (logged, counted)
    /// one whose time is up or that cannot be read.
    /// - Parameter waited: Whether it waited for the connection: published again when no host answers it within
    ///   ``Limits/bridgeReconnectGrace`` of connecting, rather than declined.
    func take(_ note: RelayedNotification, waited: Bool = false) {
        guard let name = GroupNotificationCenter.requestedName(of: note.name), let archive = note.userInfo,
            let address = GroupNotificationCenter.requestAddress(archive), address.remaining > 0
        else {
            return drop("request \(note.name) not carried: expired, or not a request the bridge can read (its userInfo must hold value classes only)")
        }
        let subject = subjects.request(for: name, object: note.object)
        guard subject.utf8.count <= Limits.natsLongestSubject else {
            return drop("request \(name) not carried: its subject of \(subject.utf8.count) bytes is over the \(Limits.natsLongestSubject) a server reads")
        }
        let until = GroupNotificationCenter.uptimeNanoseconds + address.remaining
        enum Next { case publish(NATSConnection, String, UInt64), kept, full }
        let next = state.withLock { state -> Next in
            guard let connection = state.connection, let inbox = state.inbox else {
                let bytes = state.waiting.reduce(archive.count) { $0 + ($1.userInfo?.count ?? 0) }
                guard state.waiting.count < Limits.bridgeWaitingRequests, bytes <= Limits.bridgeWaitingRequestBytes else { return .full }
                state.waiting.append(note)
                return .kept
            }
            guard state.outgoing.count < Limits.bridgeOpenRequests else { return .full }
            state.nextToken += 1
            state.outgoing[state.nextToken] = Outgoing(
                id: address.id, replyTo: address.replyTo, name: name, until: until, waited: waited ? note : nil)
            return .publish(connection, inbox, state.nextToken)
        }
        guard case .publish(let connection, let inbox, let token) = next else {
            if case .full = next { drop("request \(name) not carried: too many wait already") }
            return
        }
        do throws(BridgeError) {
            let payload = try BridgeRequest(name: name, object: note.object, userInfo: archive, remaining: address.remaining).encoded()
            // Counted first: the reply may come before this thread goes on.
            count { $0.sent += 1 }
            do throws(BridgeError) {
                try connection.publish(subject, replyTo: "\(inbox).\(token)", headers: headers, payload: payload)
            } catch {
                count { $0.sent -= 1 }
                throw error
            }
        } catch {
            _ = state.withLock { $0.outgoing.removeValue(forKey: token) }
            drop("request \(name) not carried: \(error)")
        }
    }

    /// A reply in this connection's inbox: the first to a request is posted to its requester, the server's "no
    /// responders" as a reply that says nobody answers there; later ones are dropped.
    private func answer(_ message: NATSMessage) {
        guard let dot = message.subject.lastIndex(of: "."), let token = UInt64(message.subject[message.subject.index(after: dot)...]),
            let request = state.withLock({ $0.outgoing.removeValue(forKey: token) })
        else {
            // A second host's reply, or one after the request's time: the requester took the first already.
            return
        }
        let userInfo: [UInt8]?
        switch message.headers?.status {
        case 503?:
            let now = GroupNotificationCenter.uptimeNanoseconds
            let grace = Int64(Limits.bridgeReconnectGrace / .nanoseconds(1))
            if let note = request.waited, request.until > now, state.withLock({ state -> Bool in
                guard state.connectedAt != 0, now - state.connectedAt < grace else { return false }
                state.again.append(note)
                return true
            }) {
                // Made while this host was not connected: the hosts that answer it may not be connected yet.
                return
            }
            do {
                userInfo = try GroupNotificationCenter.noResponderReply()
            } catch {
                return drop("no responder for \(request.name) on other hosts, and that cannot be said: \(error)")
            }
        case let status?:
            return drop("reply to \(request.name) dropped: the server answered with status \(status)")
        case nil:
            guard message.headerError == nil else { return drop("reply to \(request.name) dropped: its headers do not read") }
            userInfo = message.payload.isEmpty ? nil : message.payload
        }
        do {
            try center.postRelayed(name: request.replyTo, object: request.id, userInfo: userInfo, retain: false)
        } catch {
            drop("reply to \(request.name) not posted: \(error)")
        }
    }

    // MARK: Other hosts' requests

    /// A request from another host: posted here when a responder of this group answers it, its reply's way back
    /// open first. Dropped (logged, counted) when it is not a routed request, its time is up, no responder here
    /// answers it any more, or it does not read; its requester then times out.
    private func serve(_ message: NATSMessage) {
        // Replies go to an inbox only: never to a subject of the stream or of JetStream's API.
        guard let inbox = message.replyTo, inbox.hasPrefix("_INBOX."), NATSSubject.isValidLiteral(inbox) else {
            return drop("a request on \(message.subject) says no inbox to reply to; dropped")
        }
        let request: BridgeRequest
        do {
            request = try BridgeRequest(message.payload)
        } catch {
            return drop("a request on \(message.subject) does not read: \(error)")
        }
        let requestName = GroupNotificationCenter.requestName(for: request.name)
        guard routes.incoming(requestName) == .request, message.subject == subjects.request(for: request.name, object: request.object) else {
            return drop("a request for \(request.name) on \(message.subject) is not routed here, or not under its subject; dropped")
        }
        let remaining = min(request.remaining, Int64(Limits.maximumRequestTimeout / .nanoseconds(1)))
        guard remaining > 0 else { return drop("request \(request.name) from another host came after its time") }
        guard center.hasResponder(forName: request.name, object: request.object) else {
            // Its responder went since the last look: looked at again at once, so that the next request finds
            // no subscription here, and the server says so.
            state.withLock { $0.lastLook = 0 }
            return drop("request \(request.name) from another host dropped: no responder here answers it now")
        }
        do {
            let restamped = try GroupNotificationCenter.restampedRequest([UInt8](request.userInfo), remaining: remaining)
            guard let address = GroupNotificationCenter.requestAddress(restamped) else {
                throw BridgeError("it does not say where to reply")
            }
            let until = GroupNotificationCenter.uptimeNanoseconds + remaining
            let ways = self.ways
            try state.withLock { state throws in
                guard state.incoming[address.id] == nil else {
                    throw BridgeError("a request with its id is open already")
                }
                guard state.incoming.count < Limits.bridgeOpenRequests else {
                    throw BridgeError("\(Limits.bridgeOpenRequests) requests are open already")
                }
                // Before the request is posted, so that no reply comes before its way back is open; under the
                // lock, so that the last reply of another request that used it does not close it in between.
                try ways.open(address.replyTo, until: until)
                state.incoming[address.id] = Incoming(inbox: inbox, replyTo: address.replyTo, until: until)
                state.uses[address.replyTo, default: 0] += 1
            }
            do {
                try center.postRelayed(name: requestName, object: request.object, userInfo: restamped, retain: false)
            } catch {
                _ = forget(address.id)
                throw error
            }
            count { $0.answered += 1 }
        } catch {
            drop("request \(request.name) from another host not posted: \(error)")
        }
    }

    /// A reply of this group to another host's request: the first goes to the requester's inbox.
    private func sendBack(_ reply: RelayedNotification) {
        guard let id = reply.object, let (request, connection) = forget(id) else { return }
        guard let connection else { return drop("a reply to another host's request not sent: not connected") }
        do throws(BridgeError) {
            try connection.publish(request.inbox, headers: headers, payload: reply.userInfo ?? [])
        } catch {
            drop("a reply to another host's request not sent: \(error)")
            // Larger than the server carries, for one: its requester hears why, rather than waiting for its
            // timeout. Nothing more when this cannot be sent either (the connection ended).
            let why = "the reply could not cross to the requester's host: \(error)"
            if let failure = try? UserInfoCodec.encode([RequestEnvelope.errorKey: why], maximumSize: 64 << 10) {
                try? connection.publish(request.inbox, headers: headers, payload: failure)
            }
        }
    }

    /// Ends following another host's request `id`, and closes its way back when no other open request uses it:
    /// a reply to it is not carried any more. Returns it, and the connection to send its reply on; nil when it
    /// is not open.
    private func forget(_ id: String) -> (Incoming, NATSConnection?)? {
        let ways = self.ways
        return state.withLock { state -> (Incoming, NATSConnection?)? in
            guard let request = state.incoming.removeValue(forKey: id) else { return nil }
            let left = (state.uses[request.replyTo] ?? 1) - 1
            state.uses[request.replyTo] = left > 0 ? left : nil
            if left <= 0 { ways.close(request.replyTo) }
            return (request, state.connection)
        }
    }

    /// What the requests did since the bridge started.
    var tally: Counts { counts.withLock { $0 } }

    private func count(_ change: (inout Counts) -> Void) { counts.withLock { change(&$0) } }

    private func drop(_ message: String) {
        count { $0.dropped += 1 }
        BridgeLog.write(message)
    }

    /// Ends what the bridge follows: its replies' ways back close.
    func close() {
        ways.closeAll()
        state.withLock { state in
            state.outgoing = [:]
            state.incoming = [:]
            state.uses = [:]
            state.connection = nil
        }
    }
}
