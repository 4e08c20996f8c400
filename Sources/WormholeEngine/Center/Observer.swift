import Foundation
import Synchronization

/// One registered observer; it is also the token `addObserver` returns.
package final class Observer: NSObject, Sendable {
    let id: UInt64
    package let center: ObjectIdentifier
    package let subscription: Subscription
    let allowed: AllowedClasses
    /// Where notifications wait for the observer's queue, actor or consumer; nil when its block runs on the
    /// receive thread.
    let observerQueue: ObserverQueue?
    /// Whether what it is handed keeps its frame, to be given back to a durable listener's spool if the observer
    /// goes before running it (``ObserverQueue/returns(to:)``).
    let keepsFrames: Bool
    /// The block, for an observer that runs on the receive thread.
    private let block: (@Sendable (Notification) -> Void)?
    /// The block, for a relay's observer, which takes frames as they came, on the receive thread.
    private let frameBlock: (@Sendable (Frame) -> Void)?
    private let active = Atomic<Bool>(true)
    /// Where an observer that first receives the retained value holds live notifications until that value is
    /// handed over, and which post that value was.
    private let gate: Mutex<Gate>
    /// Whether the observer began with its gate closed: only such an observer ever holds or takes anything there.
    private let gated: Bool

    private struct Gate {
        /// While not nil, deliveries wait here.
        var held: [(note: SendableNotification, frame: FrameIdentity, bytes: Int)]?
        /// The retained post handed over first: its live copy, arriving after the gate opened, is not delivered
        /// again.
        var first: FrameIdentity?
    }

    /// An observer whose notifications go through `observerQueue`.
    package init(
        id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses, observerQueue: ObserverQueue,
        gated: Bool = false, keepsFrames: Bool = false
    ) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.observerQueue = observerQueue
        self.keepsFrames = keepsFrames
        self.block = nil
        self.frameBlock = nil
        self.gate = Mutex(Gate(held: gated ? [] : nil))
        self.gated = gated
    }

    /// An observer whose block runs on the receive thread.
    package init(id: UInt64, center: ObjectIdentifier, subscription: Subscription, allowed: AllowedClasses, block: @escaping @Sendable (Notification) -> Void) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = allowed
        self.observerQueue = nil
        self.keepsFrames = false
        self.block = block
        self.frameBlock = nil
        self.gate = Mutex(Gate())
        self.gated = false
    }

    /// A relay's observer: its block takes each frame as it came (its poster, sequence and userInfo archive
    /// undecoded), on the receive thread.
    package init(id: UInt64, center: ObjectIdentifier, subscription: Subscription, frames: @escaping @Sendable (Frame) -> Void) {
        self.id = id
        self.center = center
        self.subscription = subscription
        self.allowed = AllowedClasses.values
        self.observerQueue = nil
        self.keepsFrames = false
        self.block = nil
        self.frameBlock = frames
        self.gate = Mutex(Gate())
        self.gated = false
    }

    var takesFrames: Bool { frameBlock != nil }

    var runsOnReceiveThread: Bool { observerQueue == nil }

    /// Keeps `note` back if the gate is closed, and takes the live copy of the retained post the gate opened with
    /// (a post that was on its way while the observer read the retained value): returns whether it did either, so
    /// that the caller does not deliver `note`. A post's identity is its own: no other is taken for it.
    func hold(_ note: SendableNotification, frame: FrameIdentity, bytes: Int) -> Bool {
        guard gated else { return false }
        return gate.withLock { gate in
            guard var waiting = gate.held else { return gate.first == frame }
            waiting.append((note, frame, bytes))
            gate.held = waiting
            return true
        }
    }

    /// Opens the gate: hands over `first` (the retained value), then what was held back, less the copy of `first`
    /// that may have arrived live meanwhile; a copy arriving later is not delivered either
    /// (``hold(_:frame:bytes:)``).
    package func open(first: (note: SendableNotification, frame: FrameIdentity, bytes: Int)?, backlog: DeliveryBacklog?) {
        gate.withLock { gate in
            guard let waiting = gate.held else { return }
            gate.held = nil
            gate.first = first?.frame
            // Without their frames: the retained value, and what waited behind it, are not given back.
            var notes: [(note: SendableNotification, bytes: Int, frame: Frame?)] = first.map { [($0.note, $0.bytes, nil)] } ?? []
            notes += waiting.filter { $0.frame != first?.frame }.map { ($0.note, $0.bytes, nil) }
            guard !notes.isEmpty else { return }
            // Handed over under the gate's lock: later live deliveries come after these.
            observerQueue?.append(notes, backlog: backlog)
        }
    }

    var isActive: Bool { active.load(ordering: .acquiring) }

    /// Stops deliveries, also those waiting: what waits is given back or dropped (``ObserverQueue/end()``), and its
    /// backlog released.
    func deactivate() {
        active.store(false, ordering: .releasing)
        observerQueue?.end()
    }

    /// Calls the block with `note` on the receive thread, unless the observer was removed meanwhile.
    func call(_ note: SendableNotification) {
        if isActive { block?(note.value) }
    }

    /// Calls a relay's block with `frame` on the receive thread, unless the observer was removed meanwhile.
    func call(_ frame: Frame) {
        if isActive { frameBlock?(frame) }
    }

    package override var description: String {
        "<Wormhole observer \(id): name \(subscription.name ?? "any"), object \(subscription.object ?? "any")>"
    }
}

/// Carries a notification to the one queue that delivers it, in parts whose layout this module knows; the
/// `Notification` is made when it is delivered (``value``). Foundation may change a `Notification`'s layout, so
/// every copy of one, and of a tuple or optional holding one, goes through run-time value witnesses: on Linux,
/// about 500 instructions per notification on its way from the frame to the observer's block.
/// Safe because each is made fresh for a single delivery and never mutated after.
package struct SendableNotification: @unchecked Sendable {
    let name: String
    /// A notification's object here is a string, or nil: what crosses processes.
    let object: String?
    package let userInfo: [AnyHashable: Any]?

    init(name: String, object: String?, userInfo: [AnyHashable: Any]?) {
        self.name = name
        self.object = object
        self.userInfo = userInfo
    }

    /// `value`, whose object is a string or nil (any other object is dropped).
    package init(_ value: Notification) {
        self.init(name: value.name.rawValue, object: value.object as? String, userInfo: value.userInfo)
    }

    package var value: Notification {
        Notification(name: Notification.Name(name), object: object, userInfo: userInfo)
    }
}
