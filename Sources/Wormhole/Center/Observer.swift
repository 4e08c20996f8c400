import Foundation
import Synchronization

/// One registered observer; it is also the token `addObserver` returns.
final class Observer: NSObject, Sendable {
    let id: UInt64
    let center: ObjectIdentifier
    let subscription: Subscription
    let allowed: AllowedClasses
    private let operationQueue: OperationQueue?
    private let serialQueue: DispatchQueue
    private let block: @Sendable (Notification) -> Void
    private let active = Atomic<Bool>(true)

    init(
        id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses,
        queue: OperationQueue?, serialQueue: DispatchQueue, block: @escaping @Sendable (Notification) -> Void
    ) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.operationQueue = queue
        self.serialQueue = serialQueue
        self.block = block
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Stops deliveries, also those already queued.
    func deactivate() {
        active.store(false, ordering: .releasing)
    }

    /// Calls the block on the observer's queue, later, unless the observer is removed first.
    func enqueue(name: String, object: String?, userInfo: [AnyHashable: Any]?) {
        let note = SendableNotification(Notification(name: Notification.Name(name), object: object, userInfo: userInfo))
        let work: @Sendable () -> Void = { [self] in
            if isActive { block(note.value) }
        }
        if let operationQueue {
            operationQueue.addOperation(work)
        } else {
            serialQueue.async(execute: work)
        }
    }

    override var description: String {
        "<Wormhole observer \(id): name \(subscription.name ?? "any"), object \(subscription.object ?? "any")>"
    }
}

/// Carries a notification to the one queue that delivers it.
/// Safe because each is made fresh for a single delivery and never mutated after.
struct SendableNotification: @unchecked Sendable {
    let value: Notification

    init(_ value: Notification) {
        self.value = value
    }
}
