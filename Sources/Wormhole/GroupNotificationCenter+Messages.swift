import Foundation

extension GroupNotificationCenter {
    /// Posts a typed message to every observer of its name, typed or not, in every process of the group.
    ///
    /// Errors are logged; ``postReporting(_:object:retain:)`` throws them instead.
    /// - Parameters:
    ///   - message: The message; its fields become the userInfo.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - retain: Whether to keep the message as its name's current value (see ``retainedMessage(of:)``).
    public func post<Message: GroupMessage>(_ message: Message, object: String? = nil, retain: Bool = false) {
        loggingFailure("message \(Message.name.rawValue)") { try postReporting(message, object: object, retain: retain) }
    }

    /// Posts a typed message and reports, like ``postReporting(name:object:userInfo:)``; with `retain`, the
    /// message also becomes its name's current value (see ``retainedMessage(of:)``).
    /// - Parameters:
    ///   - message: The message; its fields become the userInfo.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - retain: Whether to keep the message as its name's current value.
    /// - Returns: What happened to each listener, as ``postReporting(name:object:userInfo:)`` reports it.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` when the message does not encode as a keyed container;
    ///   otherwise what ``postReporting(name:object:userInfo:retain:)`` throws.
    @discardableResult
    public func postReporting<Message: GroupMessage>(_ message: Message, object: String? = nil, retain: Bool = false)
        throws -> PostReport
    {
        try postReporting(name: Message.name, object: object, userInfo: try MessageCoding.userInfo(of: message), retain: retain)
    }

    /// The current retained message of its type, or nil when there is none or it does not decode (logged).
    /// - Parameter type: The message type, whose ``GroupMessage/name`` is read.
    /// - Returns: The message last posted with `retain: true`, decoded, or nil.
    public func retainedMessage<Message: GroupMessage>(of type: Message.Type) -> Message? {
        guard let note = retainedNotification(named: Message.name) else { return nil }
        do throws(WormholeError) {
            return try MessageCoding.message(Message.self, from: note.userInfo)
        } catch {
            Log.warning("\(error)")
            return nil
        }
    }

    /// Observes typed messages. A notification of the message's name whose userInfo does not decode into
    /// `Message` is logged and counted in ``WormholeStatistics/messagesRejected``, and the block is not called.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - queue: Where the block runs; nil means the receive thread, as in
    ///     ``addObserver(forName:object:queue:using:)``.
    ///   - block: Receives each decoded message.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver<Message: GroupMessage>(
        of type: Message.Type, object: String? = nil, queue: OperationQueue?,
        using block: @escaping @Sendable (Message) -> Void
    ) -> any NSObjectProtocol {
        addMessageObserver(of: type, object: object, queue: queue, using: block)
    }

    /// Observes typed messages on the caller's actor: from a `@MainActor` model or view controller the block runs
    /// on the main actor, and may update its state directly. A notification that does not decode into `Message`
    /// is logged and counted in ``WormholeStatistics/messagesRejected``.
    ///
    /// Messages reach the block in the order received, one after another, through one hop to its actor; none
    /// starts after ``removeObserver(_:)`` returns on that actor. From a nonisolated caller, the block runs off the
    /// caller, in order.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - includingRetained: Whether to start with the current retained message (see ``post(_:object:retain:)``).
    ///   - block: Receives each decoded message, on the caller's actor.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver<Message: GroupMessage>(
        of type: Message.Type, object: String? = nil, includingRetained: Bool = false,
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Message) -> Void
    ) -> any NSObjectProtocol {
        let endpoint = self.endpoint
        let relay = ActorDelivery.relay(to: block, backlog: { endpoint.deliveryBacklog }, weight: { _ in Limits.queuedNotificationBytes })
        let observer = addMessageObserver(of: type, object: object, queue: nil, includingRetained: includingRetained, using: relay.feed)
        relay.start(observer)
        return observer
    }

    func addMessageObserver<Message: GroupMessage>(
        of type: Message.Type, object: String?, queue: OperationQueue?, includingRetained: Bool = false,
        using block: @escaping @Sendable (Message) -> Void
    ) -> Observer {
        let counters = endpoint.counters
        return addObserver(
            forName: Message.name, object: object, allowed: .propertyList, queue: queue, includingRetained: includingRetained
        ) { note in
            do throws(WormholeError) {
                block(try MessageCoding.message(Message.self, from: note.userInfo))
            } catch {
                counters.count { $0.messagesRejected += 1 }
                Log.warning("\(error)")
            }
        }
    }

    /// Typed messages as an asynchronous sequence; undecodable ones are dropped and counted, as for observers.
    ///
    /// The observer is registered before this returns, and removed when iteration ends or its task is cancelled.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    /// - Returns: The messages, in the order received.
    public func messages<Message: GroupMessage>(of type: Message.Type, object: String? = nil) -> GroupMessages<Message> {
        let (stream, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: .unbounded)
        let observer = addMessageObserver(of: type, object: object, queue: nil) { message in continuation.yield(message) }
        let endpoint = self.endpoint
        continuation.onTermination = { _ in
            endpoint.remove { $0 === observer }
        }
        return GroupMessages(stream: stream)
    }
}

/// The typed messages a ``GroupNotificationCenter`` observer receives, in order.
public struct GroupMessages<Message: GroupMessage>: AsyncSequence, Sendable {
    /// Each element is one decoded message.
    public typealias Element = Message
    /// The sequence never throws: messages that do not decode are dropped and counted.
    public typealias Failure = Never

    let stream: AsyncStream<Message>

    /// An iterator over the messages; when iteration ends or its task is cancelled, the observer is removed.
    public func makeAsyncIterator() -> AsyncStream<Message>.Iterator {
        stream.makeAsyncIterator()
    }
}
