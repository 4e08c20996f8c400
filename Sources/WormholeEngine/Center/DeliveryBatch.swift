import Foundation

/// The deliveries of one batch of received frames, in order: each observer's handed over as one piece, so that
/// its queue or actor wakes once per batch, not once per notification. Observers without a queue share one
/// run on the receive thread, placed where the first of them came among the observers.
struct DeliveryBatch {
    /// One observer's deliveries, in order, each with its frame's bytes, and the frame itself for an observer that
    /// gives back what it did not run (``Observer/keepsFrames``).
    fileprivate typealias Group = (observer: Observer, notes: [(note: SendableNotification, bytes: Int, frame: Frame?)])

    /// The observers with a queue, an actor or a sequence, in the order they first came.
    private var groups: [Group] = []
    /// How many of `groups` came before the first observer without a queue: those are handed theirs before the
    /// receive thread runs its calls, the others after. nil while no observer runs on the receive thread.
    private var groupsBeforeCalls: Int?
    /// The calls of the observers that run on the receive thread, in order.
    private var calls = Calls()
    /// The frames for relays' observers (``Observer/init(id:center:subscription:frames:)``), which run on the
    /// receive thread with the others, after them; apart, so that the common case carries no frame.
    private var frameCalls: [(Observer, Frame)] = []

    mutating func add(_ observer: Observer, frame: Frame, userInfo: [AnyHashable: Any]?) {
        let note = SendableNotification(name: frame.name, object: frame.object, userInfo: userInfo)
        if observer.hold(note, frame: FrameIdentity(frame), bytes: frame.byteCount) { return }
        guard !observer.runsOnReceiveThread else {
            if groupsBeforeCalls == nil { groupsBeforeCalls = groups.count }
            calls.append(observer, note)
            return
        }
        let kept = observer.keepsFrames ? frame : nil
        if let index = groups.firstIndex(where: { $0.observer === observer }) {
            groups[index].notes.append((note, frame.byteCount, kept))
        } else {
            groups.append((observer, [(note, frame.byteCount, kept)]))
        }
    }

    /// Adds `frame` as it is for an observer that takes frames; such an observer runs on the receive thread.
    mutating func add(frameTaker observer: Observer, frame: Frame) {
        if groupsBeforeCalls == nil { groupsBeforeCalls = groups.count }
        frameCalls.append((observer, frame))
    }

    /// On the receive thread: hands each observer its deliveries, in the order they were added, and runs those of
    /// observers without a queue through `runningObserverCode`; the observers added after those get theirs once
    /// they ran, as if they had run in their place. What is handed over is held in `backlog`, each notification by
    /// its frame's bytes, until its block has run or its observer was removed.
    /// What observers with a queue, an actor or a sequence take counts in `acknowledgement`, when a spool's
    /// hand-over keeps its files until they ran it.
    func dispatch(
        backlog: DeliveryBacklog?, acknowledging acknowledgement: SpoolAcknowledgement? = nil,
        runningObserverCode: (() -> Void) -> Void
    ) {
        guard let before = groupsBeforeCalls else {
            for group in groups { Self.enqueue(group, backlog: backlog, acknowledgement) }
            return
        }
        for group in groups[..<before] { Self.enqueue(group, backlog: backlog, acknowledgement) }
        runningObserverCode { Self.run(calls, frameCalls) }
        for group in groups[before...] { Self.enqueue(group, backlog: backlog, acknowledgement) }
    }

    /// From another thread (a post of this process's own): hands every observer with a queue its deliveries at
    /// once, and returns those of observers without one, for the receive thread to run.
    func dispatchFromAnotherThread(backlog: DeliveryBacklog?) -> (@Sendable () -> Void)? {
        for group in groups { Self.enqueue(group, backlog: backlog) }
        guard groupsBeforeCalls != nil else { return nil }
        let work = ReceiveThreadWork(calls: calls, frames: frameCalls)
        return { Self.run(work.calls, work.frames) }
    }

    /// Runs the calls of observers without a queue, then the frames for relays' observers.
    fileprivate static func run(_ calls: Calls, _ frames: [(Observer, Frame)]) {
        withAutoreleasePool {
            calls.forEach { observer, note in observer.call(note) }
            for (observer, frame) in frames { observer.call(frame) }
        }
    }

    /// Puts one observer's notifications on its queue, each holding its place in the backlog until it has run.
    fileprivate static func enqueue(_ group: Group, backlog: DeliveryBacklog?, _ acknowledgement: SpoolAcknowledgement? = nil) {
        group.observer.observerQueue?.append(group.notes, backlog: backlog, acknowledging: acknowledgement)
    }

    /// Calls in order, the first held in place: a batch mostly holds one, which then needs no array.
    fileprivate struct Calls {
        private var first: (Observer, SendableNotification)?
        private var rest: [(Observer, SendableNotification)] = []

        mutating func append(_ observer: Observer, _ note: SendableNotification) {
            if first == nil { first = (observer, note) } else { rest.append((observer, note)) }
        }

        func forEach(_ body: (Observer, SendableNotification) -> Void) {
            // Through `map`, which reads the first in place: a `guard let` copied it, retaining what it holds.
            guard first.map({ body($0.0, $0.1) }) != nil else { return }
            for (observer, note) in rest { body(observer, note) }
        }
    }
}

/// What a batch's observers without a queue run on the receive thread, handed there from another thread.
/// Safe because the arrays are built before the work that runs them, and only read there.
private struct ReceiveThreadWork: @unchecked Sendable {
    let calls: DeliveryBatch.Calls
    let frames: [(Observer, Frame)]
}

/// Which post a frame came from.
package struct FrameIdentity: Hashable, Sendable {
    let poster: UInt64
    let sequence: UInt64

    init(_ frame: Frame) {
        poster = frame.poster
        sequence = frame.sequence
    }

    package init(poster: UInt64, sequence: UInt64) {
        self.poster = poster
        self.sequence = sequence
    }
}
