#if canImport(Combine)
import Combine
import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// A publisher of the notifications of `name` (every name for nil) from any process of the group, as
    /// `NotificationCenter.publisher(for:object:)` is. Each subscription adds an observer, which its
    /// cancellation removes; notifications arrive on the center's receive thread, in order (use `receive(on:)`).
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    /// - Returns: A publisher that never fails.
    public func publisher(for name: Notification.Name?, object: String? = nil) -> Publisher {
        Publisher(center: self, name: name, object: object)
    }

    /// The notifications of one name from any process of the group, as a Combine publisher.
    public struct Publisher: Combine.Publisher, Sendable {
        /// A notification.
        public typealias Output = Notification
        /// The publisher never fails.
        public typealias Failure = Never

        let center: GroupNotificationCenter
        let name: Notification.Name?
        let object: String?

        /// Adds an observer for `subscriber`, removed when its subscription is cancelled.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Notification, S.Failure == Never {
            let subject = PassthroughSubject<Notification, Never>()
            // Safe because only the observer's block sends, one notification at a time on the receive thread.
            nonisolated(unsafe) let sender = subject
            let token = center.addObserver(forName: name, object: object, queue: nil) { note in sender.send(note) }
            let center = self.center
            subject.handleEvents(receiveCancel: { center.removeObserver(token) }).receive(subscriber: subscriber)
        }
    }
}
#endif
