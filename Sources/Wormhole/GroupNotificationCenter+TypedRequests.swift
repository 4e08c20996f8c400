import Foundation
import WormholeEngine

/// Requests and replies in the typed messages' words (``GroupRequest``).
extension GroupNotificationCenter {
    /// Sends `request` to the processes that answer its type and returns the first reply, decoded as its
    /// ``GroupRequest/Reply``; otherwise as ``request(name:object:userInfo:timeout:)``.
    /// - Parameters:
    ///   - request: What to ask; its fields are the request's userInfo.
    ///   - object: A sender tag responders may filter on, or nil.
    ///   - timeout: How long to wait for a reply, more than zero and at most a day.
    /// - Returns: The reply.
    /// - Throws: What ``request(name:object:userInfo:timeout:)`` throws; ``WormholeError/Code/responderFailed``,
    ///   naming the type, when the reply is not a `Request.Reply` or its responder threw.
    public func request<Request: GroupRequest>(
        _ request: Request, object: String? = nil, timeout: Duration
    ) async throws -> Request.Reply {
        let userInfo = try MessageCoding.userInfo(of: request)
        let id = try startRequest(name: Request.name, object: object, userInfo: userInfo, timeout: timeout)
        let reply = try await replies.pending.reply(to: id)
        try Self.checkResponder(reply, of: Request.name)
        return try ReplyCoding.reply(for: Request.self, from: reply.userInfo)
    }

    /// Adds a responder for `type` whose block runs on the caller's actor, and may await and throw; otherwise as
    /// ``addResponder(forName:object:allowedClasses:using:)``. A request that does not decode as `Request` is
    /// answered with ``WormholeError/Code/responderFailed``, and the block does not run.
    /// - Parameters:
    ///   - type: The request type to answer.
    ///   - object: The sender tag to answer, or nil for any.
    ///   - block: Receives each request, and returns its reply; an error it throws is the reply.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addResponder<Request: GroupRequest>(
        for type: Request.Type, object: String? = nil,
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Request) async throws -> Request.Reply
    ) -> any NSObjectProtocol {
        let endpoint = self.endpoint
        let observerQueue = ObserverQueue.onActor(
            responding: Self.typed(block), serialQueue: serialQueue,
            prepare: { Self.prepare($0, as: Request.name, on: endpoint) },
            answer: { envelope, reply in Self.answer(envelope, for: Request.name, with: reply, on: endpoint) })
        return addObserver(
            forName: Notification.Name(ReservedNames.request(Request.name.rawValue)), object: object,
            allowed: AllowedClasses.values, observerQueue: observerQueue)
    }

    /// Adds a responder for `type` whose block runs on `queue` (nil: the receive thread); otherwise as
    /// ``addResponder(for:object:using:)``.
    /// - Parameters:
    ///   - type: The request type to answer.
    ///   - object: The sender tag to answer, or nil for any.
    ///   - queue: Where the block runs, as in ``addObserver(forName:object:queue:using:)``.
    ///   - block: Receives each request, and returns its reply; an error it throws is the reply.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addResponder<Request: GroupRequest>(
        for type: Request.Type, object: String? = nil, queue: OperationQueue?,
        using block: @escaping @Sendable (Request) throws -> Request.Reply
    ) -> any NSObjectProtocol {
        addResponder(forName: Request.name, object: object, queue: queue) { note in
            let request = try MessageCoding.message(Request.self, from: note.userInfo)
            return try ReplyCoding.userInfo(of: try block(request), for: Request.self)
        }
    }

    /// An untyped responder's block that decodes the request, runs `block` in its isolation, and encodes its reply.
    private static func typed<Request: GroupRequest>(
        _ block: @escaping @isolated(any) @Sendable (Request) async throws -> Request.Reply
    ) -> @isolated(any) @Sendable (Notification) async throws -> sending [AnyHashable: Any]? {
        { note in
            let request = try MessageCoding.message(Request.self, from: note.userInfo)
            return try ReplyCoding.userInfo(of: try await block(request), for: Request.self)
        }
    }
}
