import Foundation

/// The deliveries of one batch of received frames, in order, handed to each queue as one piece of work:
/// one wake-up of a queue per batch instead of one per notification. Observers without a queue share one
/// group, run on the receive thread.
struct DeliveryBatch {
    /// One queue's deliveries (or, with no queue, the receive thread's), in order, and their bytes.
    fileprivate typealias Group = (queue: ObjectIdentifier?, first: Observer, items: [(Observer, SendableNotification)], bytes: Int)

    /// Who calls ``dispatch(backlog:from:)``.
    enum Caller {
        /// The receive thread, which runs the returned work at once.
        case receiveThread
        /// Another thread (a post of this process's own), which hands the returned work to the receive thread.
        case other
    }

    private var groups: [Group] = []

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
    /// queue, to run on the receive thread. On the receive thread (`caller`), the queues added after those are
    /// scheduled by the returned work once they ran, as if it had run them in their place; from another thread,
    /// every queue is scheduled at once. What goes to a queue is held in `backlog` until the queue has run it, or
    /// every observer it was for was removed.
    func dispatch(backlog: DeliveryBacklog?, from caller: Caller) -> (@Sendable () -> Void)? {
        guard let index = groups.firstIndex(where: { $0.first.runsOnReceiveThread }) else {
            for group in groups { Self.schedule(group, backlog: backlog) }
            return nil
        }
        for group in groups[..<index] { Self.schedule(group, backlog: backlog) }
        let items = DeliveryItems(items: groups[index].items)
        let later = LaterGroups(groups: Array(groups[(index + 1)...]))
        if caller == .other { for group in later.groups { Self.schedule(group, backlog: backlog) } }
        return {
            withAutoreleasePool { for (observer, note) in items.items { observer.call(note) } }
            if caller == .receiveThread { for group in later.groups { Self.schedule(group, backlog: backlog) } }
        }
    }

    /// Hands a queue its deliveries, held in `backlog` until it has run them.
    private static func schedule(_ group: Group, backlog: DeliveryBacklog?) {
        let items = DeliveryItems(items: group.items)
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
}

/// The queues of a batch that wait for its observers without a queue.
/// Safe because the array is built before the work that reads it, and only read there.
private struct LaterGroups: @unchecked Sendable {
    let groups: [DeliveryBatch.Group]
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
