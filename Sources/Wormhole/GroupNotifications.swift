import Foundation

extension GroupNotificationCenter {
    /// The notifications of `name` (nil: every name) from `object` (nil: any), as an asynchronous sequence.
    ///
    /// The observer is registered before this returns, so nothing posted afterwards is missed; it is removed
    /// when iteration ends or its task is cancelled.
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - allowedClasses: The classes a userInfo may hold besides the value classes (property-list values, `NSNull`, sets, URLs, UUIDs), or nil.
    /// - Returns: The notifications, in the order received.
    public func notifications(
        named name: Notification.Name?, object: String? = nil, allowedClasses: [AnyClass]? = nil
    ) -> GroupNotifications {
        let (stream, continuation) = AsyncStream.makeStream(of: SendableNotification.self, bufferingPolicy: .unbounded)
        let allowed = allowedClasses.map(AllowedClasses.adding) ?? .values
        let observer = addObserver(forName: name, object: object, allowedClasses: allowed, queue: nil) { note in
            continuation.yield(SendableNotification(note))
        }
        let endpoint = self.endpoint
        continuation.onTermination = { _ in
            endpoint.remove { $0 === observer }
        }
        return GroupNotifications(stream: stream)
    }
}

/// The notifications a ``GroupNotificationCenter`` observer receives, in order.
public struct GroupNotifications: AsyncSequence, Sendable {
    /// Each element is one notification, its userInfo decoded for the sequence's allowed classes.
    public typealias Element = Notification
    /// The sequence never throws.
    public typealias Failure = Never

    let stream: AsyncStream<SendableNotification>

    /// Iterates over the notifications in the order they were received.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<SendableNotification>.Iterator

        /// Waits for the next notification.
        /// - Returns: The next notification, or nil once iteration has ended (its task was cancelled).
        public mutating func next() async -> Notification? {
            await base.next()?.value
        }

        /// Waits for the next notification, staying on the caller's actor.
        /// - Parameter actor: The actor the caller runs on, or nil.
        /// - Returns: The next notification, or nil once iteration has ended (its task was cancelled).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Notification? {
            await base.next(isolation: actor)?.value
        }
    }

    /// An iterator over the notifications; when iteration ends or its task is cancelled, the observer is removed.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }
}
