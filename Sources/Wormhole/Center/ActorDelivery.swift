/// Delivers to a block isolated to an actor (the caller's, through `@_inheritActorContext`; the main actor from
/// UI code): each value, in the order received, through one task that runs on that actor, never after the
/// observer was removed. A nonisolated block runs off the caller, in order, the same way.
enum ActorDelivery {
    /// A value handed from the receive thread to the block's task.
    /// Safe because each value is handed over once and only read after: a `Notification` made for one delivery,
    /// or values of a decoded userInfo, which no one mutates.
    struct Handed<Value>: @unchecked Sendable {
        let value: Value
    }

    /// A relay to `block`: `feed` is an observer's plain block (it runs on the receive thread or the center's
    /// serial queue, in order); `start` runs the block's task once the observer exists, and ends it when the
    /// observer is removed.
    static func relay<Value>(
        to block: @escaping @isolated(any) @Sendable (Value) -> Void
    ) -> (feed: @Sendable (Value) -> Void, start: @Sendable (Observer) -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Handed<Value>.self, bufferingPolicy: .unbounded)
        let feed: @Sendable (Value) -> Void = { value in continuation.yield(Handed(value: value)) }
        let start: @Sendable (Observer) -> Void = { observer in
            observer.whenRemoved { continuation.finish() }
            let isolation = block.isolation
            Task { await consume(on: isolation, stream, observer, block) }
        }
        return (feed, start)
    }

    /// The block's task: on the block's own actor, so that the check that the observer is still there and the
    /// call happen together.
    private static func consume<Value>(
        on actor: isolated (any Actor)?, _ stream: AsyncStream<Handed<Value>>, _ observer: Observer,
        _ block: @escaping @isolated(any) @Sendable (Value) -> Void
    ) async {
        for await handed in stream {
            guard observer.isActive else { return }
            nonisolated(unsafe) let value = handed.value
            await block(value)
        }
    }
}
