import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    #if compiler(>=6.2)
    /// Asks the processes of the group that answer `name` (see
    /// ``addResponder(forName:object:allowedClasses:queue:using:)``) and returns the first reply.
    ///
    /// The request travels as a notification, with the same codec, limits and guarantees as a post, under a
    /// name that observers of every name do not see. It reaches every running responder of `name` at once, and
    /// waits in the spool of one that is suspended or durable and not running, until its deadline: a durable
    /// responder started within the timeout answers it then. The first reply wins; later ones (a second
    /// responder's, one after the timeout or after cancellation) are dropped and counted in
    /// ``WormholeStatistics/repliesDropped``. No responder answers a request whose timeout has passed.
    ///
    /// Replies come back to this process, never to a durable identity: a reply that finds its requester gone is
    /// dropped. Cancelling the calling task ends the wait at once with `CancellationError`.
    ///
    /// It runs in the caller's isolation: what crosses from the thread that receives the reply to the waiting
    /// task is the reply as received, which nothing else holds, and the `Notification` returned is made on the
    /// caller's actor, so that actor may keep it. Its userInfo holds values
    /// (property-list values, `NSNull`, sets, URLs, UUIDs); a reply holding a class of your own arrives with
    /// `userInfo == nil`, as in ``addObserver(forName:object:queue:using:)``.
    ///
    /// ```swift
    /// let reply = try await center.request(name: .init("refresh"), userInfo: ["kind": "inbox"], timeout: .seconds(5))
    /// let count = reply.userInfo?["count"] as? Int
    /// ```
    /// - Parameters:
    ///   - name: The name responders answer; not empty, nor reserved (`wormhole.request.`, `wormhole.reply.`).
    ///   - object: A sender tag responders may filter on, or nil.
    ///   - userInfo: What the responder receives, archived as a post's userInfo is; it may not use the key
    ///     `wormhole.request`.
    ///   - timeout: How long to wait for a reply, more than zero and at most a day.
    /// - Returns: The reply: named `name`, with `object`, and the userInfo the responder returned.
    /// - Throws: ``WormholeError/Code/noResponder`` at once when no process, running or durable, has a
    ///   responder for `name` and `object`; ``WormholeError/Code/timedOut`` when no reply came within `timeout`;
    ///   `CancellationError` when the task was cancelled; before anything is sent, what
    ///   ``postReporting(name:object:userInfo:)`` throws, and ``WormholeError/Code/invalidNotification`` for a
    ///   timeout out of range; the error of the only responder's listener when the request reached none (its
    ///   spool full).
    nonisolated(nonsending)
    public func request(
        name: Notification.Name, object: String? = nil, userInfo: [AnyHashable: Any]? = nil, timeout: Duration
    ) async throws -> Notification {
        let id = try startRequest(name: name, object: object, userInfo: userInfo, timeout: timeout)
        let reply = try await replies.pending.reply(to: id)
        try Self.checkResponder(reply, of: name)
        return Notification(name: name, object: object, userInfo: reply.userInfo)
    }
    #else
    /// Asks the processes of the group that answer `name` and returns the first reply, in the caller's
    /// isolation; as the form compilers from Swift 6.2 on build, which runs there without being told.
    /// - Parameters:
    ///   - name: The name responders answer.
    ///   - object: A sender tag responders may filter on, or nil.
    ///   - userInfo: What the responder receives.
    ///   - timeout: How long to wait for a reply, more than zero and at most a day.
    ///   - isolation: The caller's actor, which the returned notification belongs to.
    /// - Returns: The reply.
    public func request(
        name: Notification.Name, object: String? = nil, userInfo: [AnyHashable: Any]? = nil, timeout: Duration,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> Notification {
        let id = try startRequest(name: name, object: object, userInfo: userInfo, timeout: timeout)
        let reply = try await replies.pending.reply(to: id)
        try Self.checkResponder(reply, of: name)
        return Notification(name: name, object: object, userInfo: reply.userInfo)
    }
    #endif

    /// Throws ``WormholeError/Code/responderFailed`` for a reply that says its responder failed.
    static func checkResponder(_ reply: SendableNotification, of name: Notification.Name) throws(WormholeError) {
        guard let failure = reply.userInfo?[RequestEnvelope.errorKey] else { return }
        let reason = (failure as? String).map { String($0.prefix(1024)) } ?? "no reason given"
        throw WormholeError(.responderFailed, "the responder to \(name.rawValue) failed: \(reason)")
    }

    /// Sends a request and starts its timeout; returns its id, registered with the reply channel's pending requests.
    /// Throws as ``request(name:object:userInfo:timeout:)`` does before it waits.
    func startRequest(
        name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]?, timeout: Duration
    ) throws -> String {
        try Task.checkCancellation()
        guard timeout > .zero, timeout <= Limits.maximumRequestTimeout else {
            throw WormholeError(.invalidNotification, "a request's timeout must be more than zero and at most \(Limits.maximumRequestTimeout)")
        }
        let requestName = ReservedNames.request(name.rawValue)
        guard requestName.utf8.count <= Self.maximumNameLength else {
            throw WormholeError(
                .invalidNotification, "a request's name is longer than \(Self.maximumNameLength - ReservedNames.requestPrefix.utf8.count) bytes")
        }
        guard userInfo?[RequestEnvelope.key] == nil else {
            throw WormholeError(.invalidNotification, "a request's userInfo may not use the key \(RequestEnvelope.key)")
        }
        let waiting = Interval(timeout)
        let envelope = RequestEnvelope(
            id: FileName.hex(.random(in: 1...UInt64.max)) + FileName.hex(.random(in: 1...UInt64.max)),
            replyTo: try replies.replyName(for: self), remaining: waiting.signedNanoseconds,
            stamp: Int64(clamping: Sys.uptimeNanoseconds))
        var carried = userInfo ?? [:]
        carried[RequestEnvelope.key] = envelope.fields
        let archive = try checkedArchive(name: name, object: object, userInfo: carried)
        let pending = replies.pending
        pending.register(envelope.id)
        let report: PostReport
        do {
            report = try endpoint.post(name: requestName, object: object, userInfo: archive)
        } catch {
            pending.remove(envelope.id)
            throw error
        }
        guard report.delivered + report.spooled > 0 else {
            pending.remove(envelope.id)
            if let failure = report.failures.first { throw failure.error }
            throw WormholeError(
                .noResponder, "no process has a responder for \(name.rawValue)" + (object.map { " from \($0)" } ?? ""))
        }
        // A bridge to other hosts is one of the listeners reached; when no host answers, it declines.
        pending.reached(
            envelope.id, count: report.delivered + report.spooled,
            otherwise: WormholeError(
                .noResponder, "no process, on this host or another, has a responder for \(name.rawValue)" + (object.map { " from \($0)" } ?? "")))
        pending.expire(
            envelope.id, after: waiting.nanoseconds,
            with: WormholeError(.timedOut, "no reply to \(name.rawValue) within \(timeout)"))
        return envelope.id
    }

    /// Adds a responder: `block` answers each request for `name` (see
    /// ``request(name:object:userInfo:timeout:)``) from any process of the group, this one included,
    /// and what it returns is the reply's userInfo.
    ///
    /// The block runs as an observer's does, on `queue` (nil: the receive thread), one request after another, in
    /// the order received. Requests that reached this process while it was suspended, or that were spooled for
    /// its durable identity while it was not running, reach the block once it runs again, unless their timeout
    /// has passed: a request that expired is never answered (it is dropped and counted in
    /// ``WormholeStatistics/requestsDropped``), so a block never does work nobody waits for any more. A reply
    /// that finds its requester gone is dropped and counted in ``WormholeStatistics/repliesDropped``.
    ///
    /// The responder is marked in this process's registry entry once this returns, so that a request for `name`
    /// finds it; with a durable center, the mark stays while no process runs the identity, and requests wait in
    /// its spool. Not an error: several responders for one name (each answers; the requester takes the first
    /// reply). A request whose userInfo holds a class outside `allowedClasses` cannot be read, so it is dropped
    /// and counted; its requester times out.
    /// - Parameters:
    ///   - name: The name to answer.
    ///   - object: The sender tag to answer, or nil for any.
    ///   - allowedClasses: Classes of your own a request's userInfo may hold besides the value classes.
    ///   - queue: Where the block runs, as in ``addObserver(forName:object:queue:using:)``.
    ///   - block: Receives each request as a notification named `name`, with the requester's object and
    ///     userInfo (nil when it sent none), and returns the reply's userInfo, or nil for a reply without one.
    ///     An error it throws is the reply: the requester's `request` throws ``WormholeError/Code/responderFailed``
    ///     with the error's description. A reply that cannot be archived, or that uses the key `wormhole.error`,
    ///     is sent as such a failure, and a warning is logged.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addResponder(
        forName name: Notification.Name, object: String?, allowedClasses: [AnyClass] = [], queue: OperationQueue?,
        using block: @escaping @Sendable (Notification) throws -> [AnyHashable: Any]?
    ) -> any NSObjectProtocol {
        let endpoint = self.endpoint
        return addObserver(
            forName: Notification.Name(ReservedNames.request(name.rawValue)), object: object,
            allowedClasses: AllowedClasses.adding(allowedClasses), queue: queue
        ) { received in
            guard let (request, envelope) = Self.prepare(received, as: name, on: endpoint) else { return }
            Self.answer(envelope, for: name, with: Result { try block(request) }, on: endpoint)
        }
    }

    /// Adds a responder whose block runs on the caller's actor: from a `@MainActor` model, on the main actor, so
    /// it may read the model's state directly; from another actor, on that actor; from a nonisolated caller, on
    /// a serial queue of the center's.
    ///
    /// Requests reach the block one after another, in the order received, through one hop to its actor, as
    /// observers added with ``addObserver(forName:object:allowedClasses:using:)`` receive notifications; none
    /// starts after ``removeObserver(_:)`` returns on that actor. Otherwise as
    /// ``addResponder(forName:object:allowedClasses:queue:using:)``: expired requests never reach the block, and
    /// the first reply a requester receives wins.
    /// - Parameters:
    ///   - name: The name to answer.
    ///   - object: The sender tag to answer, or nil for any.
    ///   - allowedClasses: Classes of your own a request's userInfo may hold besides the value classes.
    ///   - block: Receives each request on the caller's actor, and returns the reply's userInfo (a value it
    ///     makes, not one the actor keeps), or nil for a reply without one. It may await (the next request waits
    ///     for it to return), and an error it throws is the reply: the requester's `request` throws
    ///     ``WormholeError/Code/responderFailed`` with the error's description.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addResponder(
        forName name: Notification.Name, object: String?, allowedClasses: [AnyClass] = [],
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Notification) async throws -> sending [AnyHashable: Any]?
    ) -> any NSObjectProtocol {
        let endpoint = self.endpoint
        let observerQueue = ObserverQueue.onActor(
            responding: block, serialQueue: serialQueue,
            prepare: { Self.prepare($0, as: name, on: endpoint) },
            answer: { envelope, reply in Self.answer(envelope, for: name, with: reply, on: endpoint) })
        return addObserver(
            forName: Notification.Name(ReservedNames.request(name.rawValue)), object: object,
            allowed: AllowedClasses.adding(allowedClasses), observerQueue: observerQueue)
    }

    /// The request as a responder's block receives it (named `name`, its userInfo without the envelope, nil
    /// when that leaves nothing), and its envelope; nil, counted and logged, when it is malformed or expired.
    static func prepare(_ request: Notification, as name: Notification.Name, on endpoint: Endpoint)
        -> (Notification, RequestEnvelope)?
    {
        guard let envelope = RequestEnvelope(request.userInfo) else {
            endpoint.counters.count { $0.requestsDropped += 1 }
            Log.warning("request for \(name.rawValue) dropped: its userInfo could not be read, or it does not say where to reply")
            return nil
        }
        guard envelope.remaining(at: Int64(clamping: Sys.uptimeNanoseconds)) > 0 else {
            endpoint.counters.count { $0.requestsDropped += 1 }
            Log.warning("request \(envelope.id) for \(name.rawValue) dropped: it expired before its responder ran")
            return nil
        }
        var userInfo = request.userInfo
        userInfo?[RequestEnvelope.key] = nil
        return (Notification(name: name, object: request.object, userInfo: userInfo?.isEmpty == false ? userInfo : nil), envelope)
    }

    /// Sends `reply` to the requester of `envelope`: the userInfo the responder returned, or, when it threw (or its
    /// reply cannot be archived or uses the reserved key), the failure under ``RequestEnvelope/errorKey``. One that
    /// finds its requester gone is counted.
    static func answer(
        _ envelope: RequestEnvelope, for name: Notification.Name, with reply: Result<[AnyHashable: Any]?, any Error>,
        on endpoint: Endpoint
    ) {
        let archive: [UInt8]?
        do {
            archive = try replyArchive(reply)
        } catch {
            Log.warning("reply to request \(envelope.id) for \(name.rawValue) sent as a failure: \(error)")
            let failure: [AnyHashable: Any] = [RequestEnvelope.errorKey: String(describing: error)]
            archive = try? UserInfoCodec.encode(failure, maximumSize: maximumPayloadSize)
        }
        do {
            let report = try endpoint.post(name: envelope.replyTo, object: envelope.id, userInfo: archive)
            if report.delivered + report.spooled == 0 && report.failures.isEmpty {
                endpoint.counters.count { $0.repliesDropped += 1 }
                Log.warning("reply to request \(envelope.id) for \(name.rawValue) dropped: its requester is gone")
            }
        } catch {
            Log.warning("reply to request \(envelope.id) for \(name.rawValue) not sent: \(error)")
        }
    }

    /// The archive of a reply's userInfo; throws what the responder threw, or why the userInfo cannot be sent.
    private static func replyArchive(_ reply: Result<[AnyHashable: Any]?, any Error>) throws -> [UInt8]? {
        guard let userInfo = try reply.get() else { return nil }
        for key in [RequestEnvelope.errorKey, RequestEnvelope.noResponderKey] where userInfo[key] != nil {
            throw WormholeError(.invalidNotification, "a reply's userInfo may not use the key \(key)")
        }
        let archive = try UserInfoCodec.encode(userInfo, maximumSize: maximumPayloadSize)
        guard archive.count <= maximumPayloadSize else {
            throw WormholeError(.payloadTooLarge, "reply archives to \(archive.count) bytes, over the \(maximumPayloadSize)-byte maximum")
        }
        return archive
    }
}
