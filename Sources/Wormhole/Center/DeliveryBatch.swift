import Foundation

/// The deliveries of one batch of received frames, in order: each observer's handed over as one piece, so that
/// its queue or actor wakes once per batch, not once per notification. Observers without a queue share one
/// group, run on the receive thread.
struct DeliveryBatch {
    /// One observer's deliveries, in order, each with its frame's bytes (`notes`); or, for the receive thread,
    /// those of every observer that runs there, in order (`calls`).
    fileprivate typealias Group = (
        observer: ObjectIdentifier?, first: Observer, notes: [(note: SendableNotification, bytes: Int)],
        calls: [(Observer, SendableNotification)]
    )

    /// Who calls ``dispatch(backlog:from:)``.
    enum Caller {
        /// The receive thread, which runs the returned work at once.
        case receiveThread
        /// Another thread (a post of this process's own), which hands the returned work to the receive thread.
        case other
    }

    private var groups: [Group] = []
    /// The frames for relays' observers (``Observer/init(id:center:subscription:frames:)``), which run on the
    /// receive thread with the others, after them; apart, so that the common case carries no frame.
    private var frameCalls: [(Observer, Frame)] = []

    var isEmpty: Bool { groups.isEmpty }

    mutating func add(_ observer: Observer, frame: Frame, userInfo: [AnyHashable: Any]?) {
        let note = SendableNotification(
            Notification(name: Notification.Name(frame.name), object: frame.object, userInfo: userInfo))
        if observer.hold(note, frame: FrameIdentity(frame), bytes: frame.byteCount) { return }
        let onReceiveThread = observer.runsOnReceiveThread
        let key = onReceiveThread ? nil : ObjectIdentifier(observer)
        if let index = groups.firstIndex(where: { $0.observer == key }) {
            if onReceiveThread {
                groups[index].calls.append((observer, note))
            } else {
                groups[index].notes.append((note, frame.byteCount))
            }
        } else if onReceiveThread {
            groups.append((key, observer, [], [(observer, note)]))
        } else {
            groups.append((key, observer, [(note, frame.byteCount)], []))
        }
    }

    /// Adds `frame` as it is for an observer that takes frames; such an observer runs on the receive thread.
    mutating func add(frameTaker observer: Observer, frame: Frame) {
        frameCalls.append((observer, frame))
        if !groups.contains(where: { $0.observer == nil }) { groups.append((nil, observer, [], [])) }
    }

    /// Hands each observer its deliveries, in the order they were added, and returns those of observers without
    /// a queue, to run on the receive thread. On the receive thread (`caller`), the observers added after those
    /// get theirs from the returned work once it ran, as if it had run them in their place; from another thread,
    /// every observer gets them at once. What is handed over is held in `backlog`, each notification by its
    /// frame's bytes, until its block has run or its observer was removed.
    func dispatch(backlog: DeliveryBacklog?, from caller: Caller) -> (@Sendable () -> Void)? {
        guard let index = groups.firstIndex(where: { $0.first.runsOnReceiveThread }) else {
            for group in groups { Self.handOver(group, backlog: backlog) }
            return nil
        }
        for group in groups[..<index] { Self.handOver(group, backlog: backlog) }
        let items = DeliveryItems(items: groups[index].calls, frames: frameCalls)
        let later = LaterGroups(groups: Array(groups[(index + 1)...]))
        if caller == .other { for group in later.groups { Self.handOver(group, backlog: backlog) } }
        return {
            withAutoreleasePool {
                for (observer, note) in items.items { observer.call(note) }
                for (observer, frame) in items.frames { observer.call(frame) }
            }
            if caller == .receiveThread { for group in later.groups { Self.handOver(group, backlog: backlog) } }
        }
    }

    private static func handOver(_ group: Group, backlog: DeliveryBacklog?) {
        group.first.handoff?.append(group.notes, backlog: backlog)
    }
}

/// The observers of a batch that wait for its observers without a queue.
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

    init(poster: UInt64, sequence: UInt64) {
        self.poster = poster
        self.sequence = sequence
    }
}

/// A batch's deliveries for the receive thread.
/// Safe because the array is built before the work that runs it and only read there.
struct DeliveryItems: @unchecked Sendable {
    let items: [(Observer, SendableNotification)]
    let frames: [(Observer, Frame)]
}
