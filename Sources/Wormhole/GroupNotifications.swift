import Foundation

extension GroupNotificationCenter {
    /// The notifications of `name` (nil: every name) from `object` (nil: any), as an asynchronous sequence.
    ///
    /// The observer is registered before this returns, so nothing posted afterwards is missed; it is removed
    /// when iteration ends or its task is cancelled.
    public func notifications(
        named name: Notification.Name?, object: String? = nil, allowedClasses: [AnyClass]? = nil
    ) -> GroupNotifications {
        let (stream, continuation) = AsyncStream.makeStream(of: SendableNotification.self, bufferingPolicy: .unbounded)
        let allowed = allowedClasses.map(AllowedClasses.init) ?? .propertyList
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
    public typealias Element = Notification
    public typealias Failure = Never

    let stream: AsyncStream<SendableNotification>

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<SendableNotification>.Iterator

        public mutating func next() async -> Notification? {
            await base.next()?.value
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Notification? {
            await base.next(isolation: actor)?.value
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }
}
