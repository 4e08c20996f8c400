import Foundation

extension ObserverQueue {
    /// A hand-over to a responder's actor, as ``onActor(of:serialQueue:convert:)`` is to an observer's: on an
    /// actor, one task that stays for the responder's life, parked while nothing waits; a nonisolated block runs
    /// on the center's serial queue. `prepare` turns each request into what the block receives and what its reply
    /// needs (nil skips it: expired or malformed), on the actor, just before the block would run; `answer` sends
    /// what the block returned, there too.
    ///
    /// Apart from the observer's because the block returns its reply as a `sending` value, which a block that
    /// returns nothing cannot be converted to.
    package static func onActor(
        responding block: @escaping @isolated(any) @Sendable (Notification) async throws -> sending [AnyHashable: Any]?,
        serialQueue: DispatchQueue, prepare: @escaping @Sendable (Notification) -> (Notification, RequestEnvelope)?,
        answer: @escaping @Sendable (RequestEnvelope, Result<[AnyHashable: Any]?, any Error>) -> Void
    ) -> ObserverQueue {
        let respond = Responding(block: block, prepare: prepare, answer: answer)
        guard let isolation = block.isolation else {
            return ObserverQueue { observerQueue in
                serialQueue.async { startTaskHere { await respond.drain(on: nil, observerQueue) } }
            }
        }
        if isolation === MainActor.shared {
            return ObserverQueue(onMainQueue: true) { observerQueue in
                Task(executorPreference: MainQueueTaskExecutor.shared) {
                    await respond.pump(on: MainActor.shared, observerQueue)
                }
            }
        }
        return ObserverQueue { observerQueue in Task { await respond.pump(on: isolation, observerQueue) } }
    }
}

/// A responder's block, and what runs before and after it for each request.
private struct Responding: Sendable {
    let block: @isolated(any) @Sendable (Notification) async throws -> sending [AnyHashable: Any]?
    let prepare: @Sendable (Notification) -> (Notification, RequestEnvelope)?
    let answer: @Sendable (RequestEnvelope, Result<[AnyHashable: Any]?, any Error>) -> Void

    /// Runs on the block's actor, so that the check that the responder is still there and the call happen
    /// together: none starts after ``ObserverQueue/end()`` ran on that actor.
    func drain(on actor: isolated (any Actor)?, _ observerQueue: ObserverQueue, staying: Bool = false) async {
        while var entries = observerQueue.takeAll(staying: staying) {
            while let entry = entries.popLast() {
                guard observerQueue.isOpen else {
                    observerQueue.stopDraining(at: entry, rest: entries)
                    break
                }
                if let (request, envelope) = prepare(entry.note.value) {
                    nonisolated(unsafe) let request = request
                    // What it returned or threw: a thrown error is a reply too, not a requester left waiting.
                    let reply: Result<[AnyHashable: Any]?, any Error>
                    do {
                        reply = .success(try await block(request))
                    } catch {
                        reply = .failure(error)
                    }
                    answer(envelope, reply)
                }
                entry.release()
            }
        }
    }

    /// An actor's drain for the responder's life: drains, parks until more arrives, and ends once it went.
    func pump(on actor: isolated any Actor, _ observerQueue: ObserverQueue) async {
        repeat {
            await drain(on: actor, observerQueue, staying: true)
        } while await observerQueue.park(on: actor)
    }
}
