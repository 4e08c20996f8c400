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
    /// Whether the block runs on the receive thread (queue nil) rather than on a queue. A gated observer uses
    /// the center's serial queue instead, whose order its gate relies on.
    let runsOnReceiveThread: Bool
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
        self.runsOnReceiveThread = queue == nil && !gated
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

    /// The backlog held by deliveries queued for this observer: released when it is removed, so that a queue
    /// that never runs them keeps its listener from reading only until then.
    private let tickets = Mutex<[DeliveryBacklog.Ticket]>([])

    func track(_ ticket: DeliveryBacklog.Ticket) {
        tickets.withLock { tickets in
            tickets.removeAll { $0.isReleased }
            tickets.append(ticket)
        }
        if !isActive { ticket.release() }
    }

    /// What ends a delivery of this observer's own (an actor's task): run once, when it is removed.
    private let removal = Mutex<(@Sendable () -> Void)?>(nil)

    /// Runs `body` when the observer is removed (at once if it was already).
    func whenRemoved(_ body: @escaping @Sendable () -> Void) {
        let now = removal.withLock { removal -> Bool in
            guard isActive else { return true }
            removal = body
            return false
        }
        if now { body() }
    }

    /// Stops deliveries, also those already queued.
    func deactivate() {
        active.store(false, ordering: .releasing)
        removal.withLock { removal in defer { removal = nil }; return removal }?()
        for ticket in tickets.withLock({ tickets in defer { tickets = [] }; return tickets }) { ticket.release() }
    }

    /// The queue the block runs on, and its identity, so that deliveries to one queue can go as one batch;
    /// nil for the receive thread.
    var queueIdentity: ObjectIdentifier? {
        if runsOnReceiveThread { return nil }
        return operationQueue.map(ObjectIdentifier.init) ?? ObjectIdentifier(serialQueue)
    }

    /// Calls the block with `note` unless the observer was removed meanwhile.
    func call(_ note: SendableNotification) {
        if isActive { block(note.value) }
    }

    /// Runs `work` on this observer's queue (not for one that runs on the receive thread).
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
