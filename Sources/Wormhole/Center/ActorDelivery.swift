import Foundation

/// Delivers to a block isolated to an actor (the caller's, through `@_inheritActorContext`; the main actor from
/// UI code): each value, in the order received, through one task that runs on that actor, never after the
/// observer was removed. A nonisolated block runs off the caller, in order, the same way.
///
/// What waits for the actor is held in the listener's ``DeliveryBacklog`` like what waits on an observer's queue,
/// so an actor that falls behind makes the listener stop reading rather than grow.
enum ActorDelivery {
    /// A value handed from the receive thread to the block's task, with the backlog it holds until the block ran.
    /// Safe because each value is handed over once and only read after: a `Notification` made for one delivery,
    /// or values of a decoded userInfo, which no one mutates.
    struct Handed<Value>: @unchecked Sendable {
        let value: Value
        let ticket: DeliveryBacklog.Ticket?
    }

    /// A relay to `block`: `feed` is an observer's plain block (it runs on the receive thread or the center's
    /// serial queue, in order); `start` runs the block's task once the observer exists, and ends it when the
    /// observer is removed (what it had not delivered is dropped, and its backlog released).
    /// - Parameters:
    ///   - backlog: The listener's backlog, once it listens.
    ///   - weight: About how many bytes a value keeps in memory while it waits.
    static func relay<Value>(
        to block: @escaping @isolated(any) @Sendable (Value) -> Void, backlog: @escaping @Sendable () -> DeliveryBacklog?,
        weight: @escaping @Sendable (Value) -> Int
    ) -> (feed: @Sendable (Value) -> Void, start: @Sendable (Observer) -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Handed<Value>.self, bufferingPolicy: .unbounded)
        let feed: @Sendable (Value) -> Void = { value in
            let ticket = backlog()?.hold(notifications: 1, bytes: weight(value))
            continuation.yield(Handed(value: value, ticket: ticket))
        }
        let start: @Sendable (Observer) -> Void = { observer in
            observer.whenRemoved { continuation.finish() }
            let isolation = block.isolation
            Task { await consume(on: isolation, stream, observer, block) }
        }
        return (feed, start)
    }

    /// What a notification keeps in memory while it waits, about: its name and its userInfo's top-level values.
    static func weight(of note: Notification) -> Int {
        var bytes = Limits.queuedNotificationBytes + note.name.rawValue.utf8.count
        for value in note.userInfo?.values ?? [:].values {
            if let data = value as? Data {
                bytes += data.count
            } else if let text = value as? String {
                bytes += text.utf8.count
            } else {
                bytes += Limits.queuedNotificationBytes / 4
            }
        }
        return bytes
    }

    /// The block's task: on the block's own actor, so that the check that the observer is still there and the
    /// call happen together. The backlog a value held is released once the block has run.
    private static func consume<Value>(
        on actor: isolated (any Actor)?, _ stream: AsyncStream<Handed<Value>>, _ observer: Observer,
        _ block: @escaping @isolated(any) @Sendable (Value) -> Void
    ) async {
        for await handed in stream {
            guard observer.isActive else { return }
            nonisolated(unsafe) let value = handed.value
            await block(value)
            handed.ticket?.release()
        }
    }
}
