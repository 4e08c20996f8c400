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
    /// While not nil, deliveries wait here: an observer that first receives the retained value holds live
    /// notifications until that value is on its queue.
    private let gate: Mutex<[(note: SendableNotification, frame: FrameIdentity)]?>

    init(
        id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses,
        queue: OperationQueue?, serialQueue: DispatchQueue, gated: Bool = false,
        block: @escaping @Sendable (Notification) -> Void
    ) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.operationQueue = queue
        self.serialQueue = serialQueue
        self.gate = Mutex(gated ? [] : nil)
        self.block = block
    }

    /// Keeps `note` back if the gate is closed; returns whether it did.
    func hold(_ note: SendableNotification, frame: FrameIdentity) -> Bool {
        gate.withLock { held in
            guard var waiting = held else { return false }
            waiting.append((note, frame))
            held = waiting
            return true
        }
    }

    /// Opens the gate: schedules `first` (the retained value), then what was held back, less the copy of `first`
    /// that may have arrived live meanwhile.
    func open(first: (note: SendableNotification, frame: FrameIdentity)?) {
        gate.withLock { held in
            guard let waiting = held else { return }
            held = nil
            var notes: [SendableNotification] = first.map { [$0.note] } ?? []
            notes += waiting.filter { $0.frame != first?.frame }.map(\.note)
            guard !notes.isEmpty else { return }
            let items = DeliveryItems(items: notes.map { (self, $0) })
            // Scheduled under the gate's lock: later live deliveries are scheduled after this one.
            schedule { for (observer, note) in items.items { observer.call(note) } }
        }
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Stops deliveries, also those already queued.
    func deactivate() {
        active.store(false, ordering: .releasing)
    }

    /// The queue the block runs on, and its identity, so that deliveries to one queue can go as one batch.
    var queueIdentity: ObjectIdentifier {
        operationQueue.map(ObjectIdentifier.init) ?? ObjectIdentifier(serialQueue)
    }

    /// Calls the block with `note` unless the observer was removed meanwhile.
    func call(_ note: SendableNotification) {
        if isActive { block(note.value) }
    }

    /// Runs `work` on this observer's queue.
    func schedule(_ work: @escaping @Sendable () -> Void) {
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

/// The deliveries of one batch of received frames, in order, handed to each queue as one piece of work:
/// one wake-up of a queue per batch instead of one per notification.
struct DeliveryBatch {
    private var groups: [(queue: ObjectIdentifier, first: Observer, items: [(Observer, SendableNotification)])] = []

    var isEmpty: Bool { groups.isEmpty }

    mutating func add(_ observer: Observer, frame: Frame, userInfo: [AnyHashable: Any]?) {
        let note = SendableNotification(
            Notification(name: Notification.Name(frame.name), object: frame.object, userInfo: userInfo))
        if observer.hold(note, frame: FrameIdentity(frame)) { return }
        let queue = observer.queueIdentity
        if let index = groups.firstIndex(where: { $0.queue == queue }) {
            groups[index].items.append((observer, note))
        } else {
            groups.append((queue, observer, [(observer, note)]))
        }
    }

    /// Schedules each queue's deliveries, in the order they were added.
    func dispatch() {
        for group in groups {
            let items = DeliveryItems(items: group.items)
            group.first.schedule {
                for (observer, note) in items.items { observer.call(note) }
            }
        }
    }
}

/// Which post a frame came from.
struct FrameIdentity: Hashable, Sendable {
    let poster: UInt64
    let sequence: UInt64

    init(_ frame: Frame) {
        poster = frame.poster
        sequence = frame.sequence
    }
}

/// A batch's deliveries for one queue.
/// Safe because the array is built before scheduling and only read after.
struct DeliveryItems: @unchecked Sendable {
    let items: [(Observer, SendableNotification)]
}
