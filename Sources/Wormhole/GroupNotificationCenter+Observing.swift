import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// Adds an observer of notifications posted by any process of the group, and returns its token.
    ///
    /// When this returns, the registration is visible to every process: anything posted afterwards reaches it.
    /// The block is always called asynchronously, also for posts from this process.
    ///
    /// Every `addObserver` form takes its arguments in Foundation's order: the name (or a typed message's type,
    /// after `for:`), the object, then what Wormhole adds (`includingRetained:`, `allowedClasses:`), then `queue:`,
    /// then the block.
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - queue: Where the block runs. nil means Wormhole's receive thread for this container: one call at a
    ///     time, in the order received, with no hop to another thread. Keep such blocks short: while one runs,
    ///     later notifications wait in the socket, then in the spool. It has no default, in every form that takes
    ///     it: with one, a call that left it out would move from the caller's actor to the receive thread
    ///     without a word from the compiler. Leave the argument out altogether (the forms without `queue:`) to
    ///     stay on the caller's actor.
    ///   - block: Receives each notification. Its userInfo holds values: property-list values, `NSNull`, sets,
    ///     URLs and UUIDs; one holding a class of your own arrives with `userInfo == nil` (pass `allowedClasses`).
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: Notification.Name?, object: String?, queue: OperationQueue?,
        using block: @escaping @Sendable (Notification) -> Void
    ) -> any NSObjectProtocol {
        addObserver(forName: name, object: object, allowedClasses: AllowedClasses.values, queue: queue, using: block)
    }

    /// Adds an observer whose userInfo may also hold the given `NSSecureCoding` classes of your own.
    ///
    /// Unlike `NSKeyedUnarchiver`'s list, `allowedClasses` is not the complete list: every observer accepts the
    /// value classes (property-list values, `NSNull`, sets, URLs, UUIDs, and the arrays and dictionaries that hold
    /// them), and `allowedClasses` adds to them. List only your own classes.
    ///
    /// A notification whose userInfo holds any class outside `allowedClasses` (or is malformed) still reaches the
    /// observer, with `userInfo == nil`, and a warning is logged.
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - allowedClasses: The classes a userInfo may hold besides the value classes; each class of your own
    ///     must be listed itself (a superclass or `NSObject` does not admit it).
    ///   - queue: Where the block runs, as in ``addObserver(forName:object:queue:using:)``.
    ///   - block: Receives each notification.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: Notification.Name?, object: String?, allowedClasses: [AnyClass], queue: OperationQueue?,
        using block: @escaping @Sendable (Notification) -> Void
    ) -> any NSObjectProtocol {
        addObserver(forName: name, object: object, allowedClasses: AllowedClasses.adding(allowedClasses), queue: queue, using: block)
    }

    /// Adds an observer whose block runs on the caller's actor: from a `@MainActor` model or view controller,
    /// on the main actor, so it may update the model's state directly; from another actor, on that actor.
    ///
    /// Notifications reach the block in the order received, one after another, through one hop to its actor
    /// that takes everything waiting; none starts after ``removeObserver(_:)`` returns on that actor. What waits
    /// counts in the listener's backlog by its size: an actor that falls behind makes the listener stop reading,
    /// and posters spool, as a slow queue does. The main actor runs only while something runs the main queue (an
    /// app's event loop, `dispatchMain()`, `RunLoop.main.run()`); a tool whose top-level code sleeps instead gets
    /// one warning when a notification has waited a few seconds. From a nonisolated caller, the block runs on a
    /// serial queue of the center's, in order. The forms with a `queue:` run the block there instead.
    /// - Parameters:
    ///   - name: The name to observe, or nil for every name.
    ///   - object: The sender tag to observe, or nil for any.
    ///   - allowedClasses: Classes of your own a userInfo may hold besides the value classes (see
    ///     ``addObserver(forName:object:allowedClasses:queue:using:)``); none by default.
    ///   - block: Receives each notification, on the caller's actor.
    /// - Returns: A token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: Notification.Name?, object: String?, allowedClasses: [AnyClass] = [],
        @_inheritActorContext using block: @escaping @isolated(any) @Sendable (Notification) -> Void
    ) -> any NSObjectProtocol {
        addObserver(
            forName: name, object: object, allowed: AllowedClasses.adding(allowedClasses),
            observerQueue: .onActor(of: block, serialQueue: serialQueue) { $0 })
    }

    /// Adds an observer whose block runs on `queue`, or on the receive thread when it is nil.
    func addObserver(
        forName name: Notification.Name?, object: String?, allowedClasses: AllowedClasses, queue: OperationQueue?,
        using block: @escaping @Sendable (Notification) -> Void
    ) -> Observer {
        if let queue {
            return addObserver(
                forName: name, object: object, allowed: allowedClasses,
                observerQueue: .onQueue(queue, serialQueue: serialQueue, block: block))
        }
        let observer = Observer(
            id: endpoint.makeObserverID(), center: ObjectIdentifier(self),
            subscription: Subscription(name: name?.rawValue, object: object), allowed: allowedClasses, block: block)
        endpoint.add(observer)
        return observer
    }

    /// Adds an observer whose notifications go through `observerQueue`; with `includingRetained`, the current retained
    /// value of `name` first.
    func addObserver(
        forName name: Notification.Name?, object: String?, allowed: AllowedClasses, observerQueue: ObserverQueue,
        includingRetained: Bool = false
    ) -> Observer {
        let durable = endpoint.identity.isDurable
        let observer = Observer(
            id: endpoint.makeObserverID(), center: ObjectIdentifier(self),
            subscription: Subscription(name: name?.rawValue, object: object), allowed: allowed, observerQueue: observerQueue,
            gated: includingRetained, keepsFrames: durable)
        endpoint.add(observer)
        // What it is handed and does not run goes back to the spool, for the identity's next run.
        if durable { observerQueue.returns(to: endpoint.listenerSpool, counting: endpoint.counters) }
        guard includingRetained, let name else { return observer }
        // Read after registering, so nothing posted in between is missed.
        let current = endpoint.retainedNotification(named: name.rawValue, allowed: allowed).flatMap { note, frame, bytes in
            object == nil || (note.object as? String) == object ? (SendableNotification(note), frame, bytes) : nil
        }
        observer.open(first: current, backlog: endpoint.deliveryBacklog)
        return observer
    }

    /// Removes an observer; no call to its block starts after this returns.
    /// - Parameter observer: A token an `addObserver` method returned; anything else is ignored.
    public func removeObserver(_ observer: Any) {
        guard let token = observer as? Observer else { return }
        endpoint.remove { $0 === token }
    }

    /// Removes an observer's registrations for `name` and `object`; nil matches any, as in Foundation.
    /// - Parameters:
    ///   - observer: A token an `addObserver` method returned; anything else is ignored.
    ///   - name: The name whose registration to remove, or nil for any.
    ///   - object: The sender tag whose registration to remove, or nil for any.
    public func removeObserver(_ observer: Any, name: Notification.Name?, object: String?) {
        guard let token = observer as? Observer else { return }
        endpoint.remove { candidate in
            candidate === token
                && (name == nil || candidate.subscription.name == name?.rawValue)
                && (object == nil || candidate.subscription.object == object)
        }
    }
}
