import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// The notifications of `name` (nil: every name) from `object` (nil: any), as an asynchronous sequence.
    ///
    /// The observer is registered before this returns, so nothing posted afterwards is missed; it is removed
    /// when the iterating task is cancelled, or when the sequence and its iterators are gone. What waits for the
    /// consumer counts in the listener's backlog by its size: a consumer that falls behind makes the listener
    /// stop reading, and posters spool, as a slow queue does; nothing is dropped.
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - allowedClasses: Classes of your own a userInfo may hold besides the value classes (property-list values,
    ///     `NSNull`, sets, URLs, UUIDs); none by default.
    /// - Returns: The notifications, in the order received.
    public func notifications(
        named name: Notification.Name?, object: String? = nil, allowedClasses: [AnyClass] = []
    ) -> GroupNotifications {
        GroupNotifications(
            observer: addSequenceObserver(forName: name, object: object, allowed: AllowedClasses.adding(allowedClasses)))
    }

    /// Adds the observer behind an async sequence.
    func addSequenceObserver(forName name: Notification.Name?, object: String?, allowed: AllowedClasses) -> SequenceObserver {
        let observerQueue = ObserverQueue(wake: nil)
        let observer = addObserver(forName: name, object: object, allowed: allowed, observerQueue: observerQueue)
        return SequenceObserver(endpoint: endpoint, observer: observer, observerQueue: observerQueue)
    }
}

/// The notifications a ``GroupNotificationCenter`` observer receives, in order.
public struct GroupNotifications: AsyncSequence, Sendable {
    /// Each element is one notification, its userInfo decoded for the sequence's allowed classes.
    public typealias Element = Notification
    /// The sequence never throws.
    public typealias Failure = Never

    let observer: SequenceObserver

    /// Iterates over the notifications in the order they were received.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let observer: SequenceObserver

        /// Waits for the next notification.
        /// - Returns: The next notification, or nil once iteration has ended (its task was cancelled).
        public mutating func next() async -> Notification? {
            await observer.next()?.value
        }

        /// Waits for the next notification, staying on the caller's actor.
        /// - Parameter actor: The actor the caller runs on, or nil.
        /// - Returns: The next notification, or nil once iteration has ended (its task was cancelled).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Notification? {
            await observer.next()?.value
        }
    }

    /// An iterator over the notifications; when its task is cancelled, or the sequence and its iterators are
    /// gone, the observer is removed.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(observer: observer)
    }
}
