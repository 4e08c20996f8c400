import Foundation
import Synchronization
import WormholeEngine

/// MMWormhole's vocabulary over a ``GroupNotificationCenter``: messages passed under an identifier stay
/// readable until cleared, and listeners hear each new one at once, from any process of the group.
///
/// ```swift
/// let wormhole = WormholeMailbox(center)
/// try wormhole.passMessage(["buttonNumber": 1], identifier: "button")
/// let value = wormhole.message(withIdentifier: "button")        // the last one, even if its sender is gone
/// let listener = wormhole.listenForMessage(withIdentifier: "button") { message in … }
/// wormhole.stopListening(listener)
/// ```
/// A message is any property-list value or `NSSecureCoding` object (or nil). It travels as the notification
/// `wormhole.message.<identifier>` with the message under the userInfo key `message`, so plain observers and
/// `wormhole listen` see it too.
public final class WormholeMailbox: Sendable {
    /// The center the mailbox posts and observes on.
    public let center: GroupNotificationCenter
    private let listeners = Mutex<[String: [any NSObjectProtocol & Sendable]]>([:])

    /// A mailbox on `center`'s container.
    /// - Parameter center: The center to post and observe on; the mailbox keeps it.
    public init(_ center: GroupNotificationCenter) {
        self.center = center
    }

    /// A mailbox on the default container of an App Group.
    /// - Parameter groupIdentifier: The App Group's identifier.
    /// - Throws: What ``GroupNotificationCenter/init(groupIdentifier:)`` throws.
    public convenience init(groupIdentifier: String) throws {
        self.init(try GroupNotificationCenter(groupIdentifier: groupIdentifier))
    }

    /// The notification name that carries messages of `identifier`: `wormhole.message.<identifier>`.
    /// - Parameter identifier: The message identifier.
    /// - Returns: The name to observe or post under with a plain center.
    public static func notificationName(forIdentifier identifier: String) -> Notification.Name {
        Notification.Name("wormhole.message." + identifier)
    }

    /// Stores `message` as the current message of `identifier` and tells every listener.
    /// - Parameters:
    ///   - message: A property-list value or `NSSecureCoding` object, or nil.
    ///   - identifier: The message identifier; must not be empty.
    /// - Returns: What happened to each listener.
    /// - Throws: ``WormholeError/Code/invalidNotification`` for an empty identifier; what
    ///   ``GroupNotificationCenter/postReporting(name:object:userInfo:retain:)`` throws.
    @discardableResult
    public func passMessage(_ message: Any?, identifier: String) throws -> PostReport {
        let name = try Self.name(identifier)
        return try center.postReporting(name: name, object: nil, userInfo: message.map { ["message": $0] }, retain: true)
    }

    /// The current message of `identifier`, decoded for `allowedClasses` (the value classes, and these),
    /// or nil when there is none.
    /// - Parameters:
    ///   - identifier: The message identifier.
    ///   - allowedClasses: Classes of your own the message may hold besides the value classes (property-list
    ///     values, `NSNull`, sets, URLs, UUIDs); none by default.
    /// - Returns: The last message passed under `identifier`, even if its sender has exited; nil when there is
    ///   none, it was cleared, or `identifier` is empty.
    public func message(withIdentifier identifier: String, allowedClasses: [AnyClass] = []) -> Any? {
        guard let name = try? Self.name(identifier) else { return nil }
        return center.retainedNotification(named: name, allowedClasses: allowedClasses)?
            .userInfo?["message"]
    }

    /// Calls `listener` with every message passed under `identifier` from now on; with `includingCurrent`,
    /// first with the current one.
    /// - Parameters:
    ///   - identifier: The message identifier.
    ///   - includingCurrent: Whether to start with the current message.
    ///   - allowedClasses: Classes of your own a message may hold besides the value classes; none by default.
    ///   - queue: Where the listener runs, as in
    ///     ``GroupNotificationCenter/addObserver(forName:object:includingRetained:allowedClasses:queue:using:)``;
    ///     no default (leave it out altogether to stay on the caller's actor).
    ///   - listener: Receives each message (nil for a message passed as nil, or one whose userInfo was refused).
    /// - Returns: A token for ``stopListening(_:)``.
    @discardableResult
    public func listenForMessage(
        withIdentifier identifier: String, includingCurrent: Bool = false, allowedClasses: [AnyClass] = [],
        queue: OperationQueue?, listener: @escaping @Sendable (Any?) -> Void
    ) -> any NSObjectProtocol {
        listen(identifier, includingCurrent: includingCurrent, allowedClasses: allowedClasses, queue: queue, listener: listener)
    }

    /// Calls `listener` on the caller's actor (the main actor from UI code, as MMWormhole calls its listeners on
    /// the main queue) with every message passed under `identifier` from now on; with `includingCurrent`, first
    /// with the current one. Messages arrive in order, one after another; none after ``stopListening(_:)``
    /// returns on that actor.
    /// - Parameters:
    ///   - identifier: The message identifier.
    ///   - includingCurrent: Whether to start with the current message.
    ///   - allowedClasses: Classes of your own a message may hold besides the value classes; none by default.
    ///   - listener: Receives each message (nil for a message passed as nil, or one whose userInfo was refused).
    /// - Returns: A token for ``stopListening(_:)``.
    @discardableResult
    public func listenForMessage(
        withIdentifier identifier: String, includingCurrent: Bool = false, allowedClasses: [AnyClass] = [],
        @_inheritActorContext listener: @escaping @isolated(any) @Sendable (Any?) -> Void
    ) -> any NSObjectProtocol {
        let name = Self.notificationName(forIdentifier: identifier)
        let observer = center.addObserver(
            forName: name, object: nil, allowed: AllowedClasses.adding(allowedClasses),
            observerQueue: .onActor(of: listener, serialQueue: center.serialQueue) { note in .some(note.userInfo?["message"]) },
            includingRetained: includingCurrent)
        listeners.withLock { $0[identifier, default: []].append(observer) }
        return observer
    }

    private func listen(
        _ identifier: String, includingCurrent: Bool, allowedClasses: [AnyClass], queue: OperationQueue?,
        listener: @escaping @Sendable (Any?) -> Void
    ) -> Observer {
        let name = Self.notificationName(forIdentifier: identifier)
        let observer = center.addObserver(
            forName: name, object: nil, allowed: AllowedClasses.adding(allowedClasses), queue: queue,
            includingRetained: includingCurrent
        ) { note in
            listener(note.userInfo?["message"])
        }
        listeners.withLock { $0[identifier, default: []].append(observer) }
        return observer
    }

    /// Stops one listener.
    /// - Parameter listener: A token ``listenForMessage(withIdentifier:includingCurrent:allowedClasses:listener:)`` returned.
    public func stopListening(_ listener: any NSObjectProtocol) {
        center.removeObserver(listener)
    }

    /// Stops every listener of `identifier` added through this mailbox.
    /// - Parameter identifier: The message identifier.
    public func stopListeningForMessage(withIdentifier identifier: String) {
        let removed = listeners.withLock { $0.removeValue(forKey: identifier) } ?? []
        for listener in removed { center.removeObserver(listener) }
    }

    /// Forgets the current message of `identifier`.
    /// - Parameter identifier: The message identifier.
    public func clearMessageContents(forIdentifier identifier: String) {
        guard let name = try? Self.name(identifier) else { return }
        center.clearRetainedNotification(named: name)
    }

    /// Forgets the current message of every identifier, as MMWormhole does: the retained notifications named
    /// `wormhole.message.<identifier>`, and no other.
    ///
    /// Retained notifications posted under other names (a widget's `status`) stay;
    /// ``GroupNotificationCenter/clearAllRetainedNotifications()`` forgets every one. Having nothing to forget
    /// is not an error.
    public func clearAllMessageContents() {
        center.endpoint.retained.clearAll(namesStartingWith: Self.notificationName(forIdentifier: "").rawValue)
    }

    private static func name(_ identifier: String) throws(WormholeError) -> Notification.Name {
        guard !identifier.isEmpty else {
            throw WormholeError(.invalidNotification, "a message identifier must not be empty")
        }
        return notificationName(forIdentifier: identifier)
    }
}
