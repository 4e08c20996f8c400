import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// Posts, and with `retain` also keeps the notification as its name's current value in the container,
    /// readable with ``retainedNotification(named:allowedClasses:)`` after the poster has exited.
    ///
    /// The value is written to a temporary file and renamed into place before the notification is sent, so
    /// no lock is held and a reader sees the old value or the new one, never a torn one. Errors are logged;
    /// ``postReporting(name:object:userInfo:retain:)`` throws them instead.
    ///
    /// `post(name:object:retain:)` posts without a userInfo; a call without `retain:` is
    /// ``post(name:object:userInfo:)``, which never retains.
    /// - Parameters:
    ///   - name: The notification's name; must not be empty.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - userInfo: Property-list values or `NSSecureCoding` objects, archived with secure coding; nil, the
    ///     default, for none.
    ///   - retain: Whether to keep the notification as its name's current value.
    public func post(name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil, retain: Bool) {
        loggingFailure("notification \(name.rawValue)") {
            try postReporting(name: name, object: object, userInfo: userInfo, retain: retain)
        }
    }

    /// ``postReporting(name:object:userInfo:)`` that with `retain` also keeps the notification as its name's
    /// current value.
    /// - Parameters:
    ///   - name: The notification's name; must not be empty.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - userInfo: Property-list values or `NSSecureCoding` objects, archived with secure coding; nil, the
    ///     default, for none.
    ///   - retain: Whether to keep the notification as its name's current value.
    /// - Returns: What happened to each listener.
    /// - Throws: As ``postReporting(name:object:userInfo:)``, and a system error when the value cannot be stored
    ///   (then nothing is sent).
    @discardableResult
    public func postReporting(name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil, retain: Bool)
        throws -> PostReport
    {
        let archive = try checkedArchive(name: name, object: object, userInfo: userInfo)
        return try endpoint.post(name: name.rawValue, object: object, userInfo: archive, retain: retain)
    }

    /// The last retained notification of `name`, with its userInfo decoded for the value classes and `allowedClasses`
    /// (a class outside them gives `userInfo == nil` and a warning), or nil if none.
    /// - Parameters:
    ///   - name: The notification's name.
    ///   - allowedClasses: Classes of your own its userInfo may hold besides the value classes (property-list
    ///     values, `NSNull`, sets, URLs, UUIDs); none by default.
    /// - Returns: The notification last posted with `retain: true` under `name`, even by a process that has
    ///   exited; nil when there is none or it was cleared.
    public func retainedNotification(named name: Notification.Name, allowedClasses: [AnyClass] = []) -> Notification? {
        endpoint.retainedNotification(named: name.rawValue, allowed: AllowedClasses.adding(allowedClasses))?.0
    }

    /// Forgets the retained value of `name`. Forgetting a value that is not there is not an error.
    /// - Parameter name: The notification's name.
    public func clearRetainedNotification(named name: Notification.Name) {
        endpoint.retained.clear(name: name.rawValue)
    }

    /// Forgets every retained value in the container, under every name: a ``WormholeMailbox``'s messages and
    /// every other (``WormholeMailbox/clearAllMessageContents()`` forgets the messages only). Having nothing to
    /// forget is not an error.
    public func clearAllRetainedNotifications() {
        endpoint.retained.clearAll()
    }

    /// Adds an observer that, with `includingRetained`, first receives the current retained value of `name`
    /// (if any, and if its object matches), then every later notification: a widget that starts late is never
    /// blank. A notification posted while the observer registers is delivered once, after the retained value.
    /// With `includingRetained` and a nil `queue`, the block runs on a serial queue of the center's, which keeps
    /// the retained value ahead of live notifications; without it, as in ``addObserver(forName:object:queue:using:)``.
    /// - Parameters:
    ///   - name: The name to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - includingRetained: Whether to start with the current retained value.
    ///   - allowedClasses: Classes of your own a userInfo may hold besides the value classes (property-list values,
    ///     `NSNull`, sets, URLs, UUIDs); none by default.
    ///   - queue: Where the block runs; see above for nil. No default, as in
    ///     ``addObserver(forName:object:queue:using:)``.
    ///   - block: Receives the retained notification, then each new one.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: Notification.Name, object: String?, includingRetained: Bool, allowedClasses: [AnyClass] = [],
        queue: OperationQueue?, using block: @escaping @Sendable (Notification) -> Void
    ) -> any NSObjectProtocol {
        addObserver(
            forName: name, object: object, allowed: AllowedClasses.adding(allowedClasses), queue: queue,
            includingRetained: includingRetained, using: block)
    }

    /// Adds an observer whose block runs on the caller's actor, and that with `includingRetained` first receives
    /// the current retained value of `name`, then every later notification, in order, as
    /// ``addObserver(forName:object:includingRetained:allowedClasses:queue:using:)`` does.
    /// - Parameters:
    ///   - name: The name to observe.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - includingRetained: Whether to start with the current retained value.
    ///   - allowedClasses: Classes of your own a userInfo may hold besides the value classes; none by default.
    ///   - block: Receives the retained notification, then each new one, on the caller's actor (see
    ///     ``addObserver(forName:object:allowedClasses:using:)``).
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: Notification.Name, object: String?, includingRetained: Bool, allowedClasses: [AnyClass] = [],
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Notification) -> Void
    ) -> any NSObjectProtocol {
        addObserver(
            forName: name, object: object, allowed: AllowedClasses.adding(allowedClasses),
            observerQueue: .onActor(of: block, serialQueue: serialQueue) { $0 }, includingRetained: includingRetained)
    }

    func addObserver(
        forName name: Notification.Name, object: String?, allowed: AllowedClasses, queue: OperationQueue?,
        includingRetained: Bool, using block: @escaping @Sendable (Notification) -> Void
    ) -> Observer {
        guard includingRetained else {
            return addObserver(forName: name, object: object, allowedClasses: allowed, queue: queue, using: block)
        }
        // With a nil queue, the center's serial queue: the retained value is handed over before live ones.
        return addObserver(
            forName: name, object: object, allowed: allowed, observerQueue: .onQueue(queue, serialQueue: serialQueue, block: block),
            includingRetained: true)
    }
}
