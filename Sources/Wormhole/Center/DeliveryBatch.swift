import Foundation

/// The deliveries of one batch of received frames, in order, handed to each queue as one piece of work:
/// one wake-up of a queue per batch instead of one per notification. Observers without a queue share one
/// group, run on the receive thread.
struct DeliveryBatch {
    private var groups: [(queue: ObjectIdentifier?, first: Observer, items: [(Observer, SendableNotification)], bytes: Int)] = []

    var isEmpty: Bool { groups.isEmpty }

    mutating func add(_ observer: Observer, frame: Frame, userInfo: [AnyHashable: Any]?) {
        let note = SendableNotification(
            Notification(name: Notification.Name(frame.name), object: frame.object, userInfo: userInfo))
        if observer.hold(note, frame: FrameIdentity(frame)) { return }
        let queue = observer.queueIdentity
        if let index = groups.firstIndex(where: { $0.queue == queue }) {
            groups[index].items.append((observer, note))
            groups[index].bytes += frame.byteCount
        } else {
            groups.append((queue, observer, [(observer, note)], frame.byteCount))
        }
    }

    /// Schedules each queue's deliveries, in the order they were added, and returns those of observers without a
    /// queue, to run on the receive thread. What goes to a queue is held in `backlog` until the queue has run it,
    /// or every observer it was for was removed.
    func dispatch(backlog: DeliveryBacklog?) -> (@Sendable () -> Void)? {
        var onReceiveThread: (@Sendable () -> Void)? = nil
        for group in groups {
            let items = DeliveryItems(items: group.items)
            guard !group.first.runsOnReceiveThread else {
                onReceiveThread = { withAutoreleasePool { for (observer, note) in items.items { observer.call(note) } } }
                continue
            }
            let ticket = backlog?.hold(notifications: group.items.count, bytes: group.bytes)
            if let ticket {
                var seen = Set<ObjectIdentifier>()
                for (observer, _) in group.items where seen.insert(ObjectIdentifier(observer)).inserted { observer.track(ticket) }
            }
            group.first.schedule {
                withAutoreleasePool { for (observer, note) in items.items { observer.call(note) } }
                ticket?.release()
            }
        }
        return onReceiveThread
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
