import Foundation
import Synchronization

/// The receive thread's loop: waits on the inbox and the wake pipe, reads what posters sent through the socket,
/// takes what they spooled, and hands both over in the order posted.
extension Listener {
    func run() {
        guard let inbox = inbox.withLock({ $0.take() }) else { return }
        var drain = SpoolDrain(folder: spool, handlers: spoolHandlers())
        var schedule = ReceiveSchedule(now: Sys.uptimeNanoseconds)
        var events = PollSet()
        /// What a round read from the sockets: its storage is kept from round to round.
        var received: [Frame] = []
        connectWakeSocket()
        // Each round in an autorelease pool of its own: the thread's own pool would drain only as it ends.
        while !stops(&schedule) {
            withAutoreleasePool {
                round(inbox, &drain, &schedule, &events, &received)
            }
        }
        // A durable listener's socket stayed in place while it ended (no other process may claim the identity
        // meanwhile): its name goes now, and what posters sent to it until then is read once more and handed over
        // (or held for the identity's next run), with what was read while taken segments waited, in order.
        var last: [Frame] = []
        if identity.isDurable {
            removeSocketFile()
            // Sealed first: a poster still connected then fails and spools rather than send what would be lost.
            inbox.seal()
            // Each read stops at a round's budget: read on while there is more (a failed socket gives nothing).
            var reads = 1
            while !inbox.receiveAll(into: &last), inbox.readAny, reads < Limits.lastReads { reads += 1 }
        }
        // Stopping while taken segments wait: what was read is handed over with them, rather than lost.
        drain.finish(last: last, durable: identity.isDurable)
    }

    /// Whether the thread is to stop: once it was asked to, the schedule's mode says so, and the loop ends.
    private func stops(_ schedule: inout ReceiveSchedule) -> Bool {
        if schedule.mode == .stopping { return true }
        guard thread.isStopping else { return false }
        schedule.handle(.stopRequested)
        return true
    }

    /// One round of the loop, in the steps ``ReceiveSchedule`` documents: takes stock of what holds it back, waits,
    /// reads, stays paused, or looks at the spool, then rebinds and keeps house as due. Moves the schedule's mode
    /// to ``ReceiveMode/stopping`` once the thread is to stop.
    private func round(
        _ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule, _ events: inout PollSet,
        _ received: inout [Frame]
    ) {
        // What holds the loop back in this round: a hand-over of the spool that stopped, the observers' backlog, a
        // durable listener's wait for its observers.
        schedule.takeStock(
            handingOver: drain.isHandingOver, backlogOver: backlog.isOver, durable: identity.isDurable,
            observerWait: { thread.readingWait() })
        let timeout = schedule.timeout(inboxTimeout: schedule.mode.reads ? inbox.pollTimeout : nil)
        guard let waited = wait(inbox, timeout: timeout, &schedule, &events, &received) else { return }
        guard read(inbox, waited, &drain, &events, &received) else {
            schedule.handle(.stopRequested)
            return
        }
        let round = schedule.begin(at: Sys.uptimeNanoseconds, ready: waited.ready, timeout: timeout)
        if staysPaused(inbox, round, &drain, &schedule) { return }
        let failure = lookAtSpool(inbox, &drain, &schedule)
        if stops(&schedule) { return }
        rebindFailedSocket(inbox, failure, &drain, &schedule)
        if round.housekeepingDue { keepHouse(inbox, &drain, &schedule) }
    }

    /// Step 2: waits at most `timeout` milliseconds on the wake pipe, and on the sockets while the loop reads.
    /// Returns how many descriptors were ready (the wake pipe included), and whether the wait was a read of the
    /// socket, which read what came into `received`; nil when the wait failed: counted, said at most once a
    /// second, and a pause rather than a spin.
    private func wait(
        _ inbox: any Inbox, timeout: Int32, _ schedule: inout ReceiveSchedule, _ events: inout PollSet,
        _ received: inout [Frame]
    ) -> (ready: Int, readInWait: Bool)? {
        let reads = schedule.mode.reads
        do throws(WormholeError) {
            try InjectedFault.failPoll()
            // Work handed to this thread runs in the wait, when it wakes. A datagram socket is waited on in its
            // read where it can be: one system call a wake-up instead of two.
            if reads, hasWakeSocket,
                let came = thread.waitInRead({ inbox.receiveWaiting(timeoutMilliseconds: timeout, into: &received) })
            {
                return (came ? 1 : 0, true)
            }
            // Made again only when the inbox's sockets changed, or the loop pauses (the wake pipe alone).
            let shape = reads ? inbox.pollShape : nil
            if shape == nil || events.shape != shape {
                thread.prepare(&events)
                if reads { inbox.addPollDescriptors(to: &events) }
                events.shape = shape
            }
            return (try thread.wait(&events, timeoutMilliseconds: timeout), false)
        } catch {
            let says = schedule.waitFailed(at: Sys.uptimeNanoseconds)
            sink.receiveFailed("waiting for the sockets of listener \(FileName.hex(id)) failed: \(error)", says: says)
            Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
            return nil
        }
    }

    /// Step 3: reads what the wait found ready (unless the wait read it) and hands it over, or keeps it while
    /// taken segments wait or a hand-over stopped (``SpoolDrain/keepIfWaiting(_:)``). Returns false once the
    /// thread is to stop: what a wait in a read brought before a stop is handed over first, as a round's reads are.
    private func read(
        _ inbox: any Inbox, _ waited: (ready: Int, readInWait: Bool), _ drain: inout SpoolDrain,
        _ events: inout PollSet, _ received: inout [Frame]
    ) -> Bool {
        if thread.isStopping && received.isEmpty { return false }
        guard waited.ready > 0 else { return true }
        if !waited.readInWait { inbox.receiveReady(events.dropFirst(), into: &received) }
        if !drain.keepIfWaiting(received) { hand(received) }
        // Emptied at once: an idle listener keeps no frame alive (a shared frame's mapped userInfo). One frame
        // at a time, keeping the array's room: `removeAll(keepingCapacity:)` goes through Array's generic
        // replacement of a range, which costs 90 instructions more than a round's one frame popped (and a
        // test of the count to choose between the two cost more than it saved). Where a hand-over kept the
        // frames, the array is shared: the first pop copies it once, to exactly its count.
        while received.popLast() != nil {}
        return !thread.isStopping
    }

    /// Step 4: whether the round ends paused, after its reads, as the backlog and a wait for observers say now.
    /// A wait for observers that ended in this round goes on to look at the spool, with nothing read from the
    /// sockets before it: what they hold comes after the spool's backlog. A hand-over of the spool goes on when
    /// the observers have room; meanwhile the sockets are not polled or bound anew, and the spool is not looked
    /// at; what is read all the same (a datagram inbox's sealed sockets) goes after the hand-over
    /// (``SpoolDrain/keepIfWaiting(_:)``).
    private func staysPaused(
        _ inbox: any Inbox, _ round: ReceiveSchedule.Round, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule
    ) -> Bool {
        guard schedule.pausesAfterReads(backlogOver: backlog.isOver, observerWait: { thread.readingWait() }) else {
            return false
        }
        switch schedule.mode {
        case .reading:
            return false
        case .handingOver(let resumes):
            if resumes { drain.resume() }
            schedule.paused()
            if round.housekeepingDue { sink.keepHouse(for: self) }
        case .pausedForBacklog, .awaitingFirstObserver, .awaitingObservers:
            schedule.paused()
            if round.housekeepingDue { keepHouse(inbox, &drain, &schedule) }
        case .stopping:
            break
        }
        return true
    }

    /// Step 5: looks at the bell when something suggests a poster spooled, and drains the spool when it rang or
    /// something else asks for it. Returns why the socket posters reach failed, if it did, as it is after the
    /// drain.
    private func lookAtSpool(
        _ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule
    ) -> String? {
        let failure = inbox.boundSocketFailure
        var signs = ReceiveSchedule.SpoolSigns(
            recheckHeld: thread.takeRecheck(), suggestsSpooling: inbox.suggestsSpooling, drainWaiting: drain.isWaiting,
            socketFailed: failure != nil)
        guard schedule.looksAtBell(signs), schedule.drains(bell: spool.bell.value, signs) else { return failure }
        // The drain reads the sockets after the bell: what it read there came after this look.
        let outcome = drain.drain(inbox, includingHeld: signs.recheckHeld) { sink.warn("listener \(FileName.hex(id)) " + $0) }
        if outcome.heldNotOffered { thread.recheckLater() }
        signs.suggestsSpooling = inbox.suggestsSpooling
        schedule.drained(readMessages: outcome.readMessages, stillWaiting: drain.isWaiting, suggestsSpooling: signs.suggestsSpooling)
        return inbox.boundSocketFailure
    }

    /// Step 6: the socket posters reach failed (`failure`; it is no longer polled): bound anew, at most once a
    /// second while the failure persists.
    private func rebindFailedSocket(
        _ inbox: any Inbox, _ failure: String?, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule
    ) {
        guard let failure, schedule.rebindsFailedSocket() else { return }
        sink.receiveFailed("socket of listener \(FileName.hex(id)) failed: \(failure); binding it again", says: true)
        keepSocketFile(inbox, force: true, &drain, &schedule)
    }

    /// Where the spool drain hands frames: to the sink, saying whether the observers have room for more (the
    /// hand-over stops when they do not); a durable listener holds back what nothing in this process observes yet.
    private func spoolHandlers() -> SpoolReader.Handlers {
        let sink = self.sink
        return SpoolReader.Handlers(
            deliver: { [self, identity] frames, acknowledgement in
                guard !frames.isEmpty else { return (!backlog.isOver, []) }
                guard identity.isDurable else {
                    hand(frames)
                    return (!backlog.isOver, [])
                }
                let unmatched = sink.receivedFromSpool(frames, by: self, acknowledging: acknowledgement) { work in
                    thread.runObserverCode(work)
                }
                return (!backlog.isOver, unmatched)
            },
            holdBack: { [identity] frame in identity.isDurable && sink.holdsBack(frame) },
            dropped: { sink.dropped($0, $1) },
            warning: { sink.warn($0) },
            observersRemoved: { sink.observersRemoved },
            acknowledges: identity.isDurable)
    }

    /// Hands frames to the sink, and runs on this thread what the observers that run here make of them.
    func hand(_ frames: [Frame]) {
        guard !frames.isEmpty else { return }
        sink.received(frames, by: self) { work in thread.runObserverCode(work) }
    }
}
