import Foundation

/// The deliveries of one batch of received frames, in order, handed to each queue as one piece of work:
/// one wake-up of a queue per batch instead of one per notification. Observers without a queue share one
/// group, run on the receive thread.
struct DeliveryBatch {
    private var groups: [(queue: ObjectIdentifier?, first: Observer, items: [(Observer, SendableNotification)])] = []

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

    /// Schedules each queue's deliveries, in the order they were added, and gives those of observers without a
    /// queue to `receiveThread`. `ticket` is released once every queue has run its part (or dropped it unrun).
    func dispatch(holding ticket: DeliveryBacklog.Ticket?, receiveThread: (@escaping @Sendable () -> Void) -> Void) {
        for group in groups {
            let items = DeliveryItems(items: group.items)
            let work: @Sendable () -> Void = {
                for (observer, note) in items.items { observer.call(note) }
                withExtendedLifetime(ticket) {}
            }
            if group.first.runsOnReceiveThread {
                receiveThread(work)
            } else {
                group.first.schedule(work)
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
