import Foundation

extension Handoff {
    /// A hand-over to a responder's actor, as ``onActor(of:serialQueue:convert:)`` is to an observer's: one job
    /// there per wake-up, which runs the block for everything waiting. `prepare` turns each request into what the
    /// block receives and what its reply needs (nil skips it: expired or malformed), on the actor, just before
    /// the block would run; `answer` sends what the block returned, there too.
    static func onActor(
        responding block: @escaping @isolated(any) @Sendable (Notification) -> sending [AnyHashable: Any]?,
        serialQueue: DispatchQueue, prepare: @escaping @Sendable (Notification) -> (Notification, RequestEnvelope)?,
        answer: @escaping @Sendable (RequestEnvelope, sending [AnyHashable: Any]?) -> Void
    ) -> Handoff {
        guard let isolation = block.isolation else {
            return Handoff { handoff in
                serialQueue.async { startTaskHere { await drain(on: nil, handoff, block, prepare, answer) } }
            }
        }
        if isolation === MainActor.shared {
            return Handoff { handoff in
                Task { @MainActor in await drain(on: MainActor.shared, handoff, block, prepare, answer) }
                MainQueueWatch.watch()
            }
        }
        return Handoff { handoff in Task { await drain(on: isolation, handoff, block, prepare, answer) } }
    }

    /// Runs on the block's actor, so that the check that the responder is still there and the call happen
    /// together: none starts after ``Handoff/end()`` ran on that actor.
    private static func drain(
        on actor: isolated (any Actor)?, _ handoff: Handoff,
        _ block: @escaping @isolated(any) @Sendable (Notification) -> sending [AnyHashable: Any]?,
        _ prepare: @Sendable (Notification) -> (Notification, RequestEnvelope)?,
        _ answer: @Sendable (RequestEnvelope, sending [AnyHashable: Any]?) -> Void
    ) async {
        while var entries = handoff.takeAll() {
            while let entry = entries.popLast() {
                if handoff.isOpen, let (request, envelope) = prepare(entry.note.value) {
                    nonisolated(unsafe) let request = request
                    let reply = await block(request)
                    answer(envelope, reply)
                }
                entry.release()
            }
        }
    }
}
