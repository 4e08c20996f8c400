import Foundation
import Synchronization

/// One registered observer; it is also the token `addObserver` returns.
final class Observer: NSObject, Sendable {
    let id: UInt64
    let center: ObjectIdentifier
    let subscription: Subscription
    let allowed: AllowedClasses
    /// Where notifications wait for the observer's queue, actor or consumer; nil when its block runs on the
    /// receive thread.
    let handoff: Handoff?
    /// The block, for an observer that runs on the receive thread.
    private let block: (@Sendable (Notification) -> Void)?
    private let active = Atomic<Bool>(true)
    /// While not nil, deliveries wait here: an observer that first receives the retained value holds live
    /// notifications until that value is handed over.
    private let gate: Mutex<[(note: SendableNotification, frame: FrameIdentity, bytes: Int)]?>

    /// An observer whose notifications go through `handoff`.
    init(id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses, handoff: Handoff, gated: Bool = false) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.handoff = handoff
        self.block = nil
        self.gate = Mutex(gated ? [] : nil)
    }

    /// An observer whose block runs on the receive thread.
    init(id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses, block: @escaping @Sendable (Notification) -> Void) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.handoff = nil
        self.block = block
        self.gate = Mutex(nil)
    }

    var runsOnReceiveThread: Bool { handoff == nil }

    /// Keeps `note` back if the gate is closed; returns whether it did.
    func hold(_ note: SendableNotification, frame: FrameIdentity, bytes: Int) -> Bool {
        gate.withLock { held in
            guard var waiting = held else { return false }
            waiting.append((note, frame, bytes))
            held = waiting
            return true
        }
    }

    /// Opens the gate: hands over `first` (the retained value), then what was held back, less the copy of `first`
    /// that may have arrived live meanwhile.
    func open(first: (note: SendableNotification, frame: FrameIdentity, bytes: Int)?, backlog: DeliveryBacklog?) {
        gate.withLock { held in
            guard let waiting = held else { return }
            held = nil
            var notes: [(note: SendableNotification, bytes: Int)] = first.map { [($0.note, $0.bytes)] } ?? []
            notes += waiting.filter { $0.frame != first?.frame }.map { ($0.note, $0.bytes) }
            guard !notes.isEmpty else { return }
            // Handed over under the gate's lock: later live deliveries come after these.
            handoff?.append(notes, backlog: backlog)
        }
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Stops deliveries, also those waiting: what waits is dropped and its backlog released.
    func deactivate() {
        active.store(false, ordering: .releasing)
        handoff?.end()
    }

    /// Calls the block with `note` on the receive thread, unless the observer was removed meanwhile.
    func call(_ note: SendableNotification) {
        if isActive { block?(note.value) }
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
