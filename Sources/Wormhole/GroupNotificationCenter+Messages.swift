import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// Posts a typed message to every observer of its name, typed or not, in every process of the group.
    ///
    /// Errors are logged; ``postReporting(_:object:retain:)`` throws them instead.
    /// - Parameters:
    ///   - message: The message; its fields become the userInfo.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - retain: Whether to keep the message as its name's current value (see ``retainedMessage(for:)``).
    public func post<Message: GroupMessage>(_ message: Message, object: String? = nil, retain: Bool = false) {
        loggingFailure("message \(Message.name.rawValue)") { try postReporting(message, object: object, retain: retain) }
    }

    /// Posts a typed message and reports, like ``postReporting(name:object:userInfo:)``; with `retain`, the
    /// message also becomes its name's current value (see ``retainedMessage(for:)``).
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
    public func retainedMessage<Message: GroupMessage>(for type: Message.Type) -> Message? {
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
    ///
    /// Spelled as Foundation's typed messages are observed (`addObserver(of:for:using:)`): the message type
    /// after `for:`. Foundation's `of:` subject has no counterpart, since processes share no objects; `object:`
    /// filters by the sender tag a poster gave instead.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - includingRetained: Whether to start with the current retained message (see ``post(_:object:retain:)``),
    ///     as ``addObserver(forName:object:includingRetained:allowedClasses:queue:using:)`` does.
    ///   - queue: Where the block runs; nil means the receive thread, as in
    ///     ``addObserver(forName:object:queue:using:)`` (with `includingRetained`, a serial queue of the
    ///     center's). No default: leave it out altogether to stay on the caller's actor.
    ///   - block: Receives each decoded message.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver<Message: GroupMessage>(
        for type: Message.Type, object: String? = nil, includingRetained: Bool = false, queue: OperationQueue?,
        using block: @escaping @Sendable (Message) -> Void
    ) -> any NSObjectProtocol {
        addMessageObserver(for: type, object: object, includingRetained: includingRetained, queue: queue, using: block)
    }

    /// Observes typed messages on the caller's actor: from a `@MainActor` model or view controller the block runs
    /// on the main actor, and may update its state directly. A notification that does not decode into `Message`
    /// is logged and counted in ``WormholeStatistics/messagesRejected``. Spelled as Foundation's
    /// `addObserver(of:for:using:)` is, without its subject: the message type after `for:`.
    ///
    /// Messages reach the block in the order received, one after another, through one hop to its actor that
    /// takes everything waiting; none starts after ``removeObserver(_:)`` returns on that actor. What waits counts
    /// in the listener's backlog by its size, as in ``addObserver(forName:object:allowedClasses:using:)``. From a
    /// nonisolated caller, the block runs on a serial queue of the center's, in order.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - includingRetained: Whether to start with the current retained message (see ``post(_:object:retain:)``).
    ///   - block: Receives each decoded message, on the caller's actor.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver<Message: GroupMessage>(
        for type: Message.Type, object: String? = nil, includingRetained: Bool = false,
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Message) -> Void
    ) -> any NSObjectProtocol {
        addObserver(
            forName: Message.name, object: object, allowed: .propertyList,
            observerQueue: .onActor(of: block, serialQueue: serialQueue, convert: messageDecoder(Message.self)),
            includingRetained: includingRetained)
    }

    /// Decodes a notification into `Message`; one that does not decode is logged and counted, and gives nil.
    func messageDecoder<Message: GroupMessage>(_ type: Message.Type) -> @Sendable (Notification) -> Message? {
        let counters = endpoint.counters
        return { note in
            do throws(WormholeError) {
                return try MessageCoding.message(Message.self, from: note.userInfo)
            } catch {
                counters.count { $0.messagesRejected += 1 }
                Log.warning("\(error)")
                return nil
            }
        }
    }

    func addMessageObserver<Message: GroupMessage>(
        for type: Message.Type, object: String?, includingRetained: Bool = false, queue: OperationQueue?,
        using block: @escaping @Sendable (Message) -> Void
    ) -> Observer {
        let decode = messageDecoder(Message.self)
        return addObserver(
            forName: Message.name, object: object, allowed: .propertyList, queue: queue, includingRetained: includingRetained
        ) { note in
            if let message = decode(note) { block(message) }
        }
    }

    /// Typed messages as an asynchronous sequence; undecodable ones are dropped and counted, as for observers.
    ///
    /// Spelled as Foundation's `messages(of:for:)` is, without its subject: the message type after `for:`, then
    /// the sender tag to filter by.
    ///
    /// The observer is registered before this returns, and removed when the iterating task is cancelled, or when
    /// the sequence and its iterators are gone. A consumer that falls behind makes the listener stop reading, as
    /// in ``notifications(named:object:allowedClasses:)``.
    /// - Parameters:
    ///   - type: The message type to observe.
    ///   - object: The sender tag to observe, or nil for any.
    /// - Returns: The messages, in the order received.
    public func messages<Message: GroupMessage>(for type: Message.Type, object: String? = nil) -> GroupMessages<Message> {
        GroupMessages(
            observer: addSequenceObserver(forName: Message.name, object: object, allowed: .propertyList),
            decode: messageDecoder(Message.self))
    }
}

/// The typed messages a ``GroupNotificationCenter`` observer receives, in order.
public struct GroupMessages<Message: GroupMessage>: AsyncSequence, Sendable {
    /// Each element is one decoded message.
    public typealias Element = Message
    /// The sequence never throws: messages that do not decode are dropped and counted.
    public typealias Failure = Never

    let observer: SequenceObserver
    let decode: @Sendable (Notification) -> Message?

    /// Iterates over the messages in the order they were received.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let observer: SequenceObserver
        let decode: @Sendable (Notification) -> Message?

        /// Waits for the next message that decodes.
        /// - Returns: The next message, or nil once iteration has ended (its task was cancelled).
        public mutating func next() async -> Message? {
            while let note = await observer.next() {
                if let message = decode(note.value) { return message }
            }
            return nil
        }

        /// Waits for the next message that decodes, staying on the caller's actor.
        /// - Parameter actor: The actor the caller runs on, or nil.
        /// - Returns: The next message, or nil once iteration has ended (its task was cancelled).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Message? {
            while let note = await observer.next() {
                if let message = decode(note.value) { return message }
            }
            return nil
        }
    }

    /// An iterator over the messages; when its task is cancelled, or the sequence and its iterators are gone,
    /// the observer is removed.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(observer: observer, decode: decode)
    }
}
