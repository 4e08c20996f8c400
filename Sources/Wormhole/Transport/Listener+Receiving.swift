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
        while !thread.isStopping {
            let goesOn = withAutoreleasePool {
                round(inbox, &drain, &schedule, &events, &received)
            }
            if !goesOn { break }
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

    /// One round of the loop (``ReceiveSchedule``): waits, reads the sockets, looks at the spool, rebinds and
    /// keeps house as due. Returns false once the thread is to stop.
    private func round(
        _ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule, _ events: inout PollSet,
        _ received: inout [Frame]
    ) -> Bool {
        // Observers' queues hold too much of what was read: read nothing more until they have worked it down (they
        // wake this thread), and posters fill the sockets, then the spool. A durable listener reads nothing either
        // until its first observer is added, nor while it waits for the observers that follow before it hands its
        // spool over: what is posted meanwhile stays behind the spool's backlog.
        // A hand-over of the spool that stopped for the observers reads nothing either until it is done; a wait
        // for observers is looked at again after it.
        let handingOver = drain.isHandingOver
        let readingWait = identity.isDurable && !handingOver ? thread.readingWait() : nil
        let paused = backlog.isOver || readingWait != nil || handingOver
        let timeout = schedule.timeout(
            paused: paused, resumesHandOver: handingOver && !backlog.isOver, readingWait: readingWait,
            inboxTimeout: paused ? nil : inbox.pollTimeout)
        let ready: Int
        /// Whether the wait was a read of the socket, which read what came.
        var readInWait = false
        do throws(WormholeError) {
            try InjectedFault.failPoll()
            // Work handed to this thread runs in the wait, when it wakes. A datagram socket is waited on in its
            // read where it can be: one system call a wake-up instead of two.
            if !paused, hasWakeSocket,
                let came = thread.waitInRead({ inbox.receiveWaiting(timeoutMilliseconds: timeout, into: &received) })
            {
                ready = came ? 1 : 0
                readInWait = true
            } else {
                // Made again only when the inbox's sockets changed, or the loop pauses (the wake pipe alone).
                let shape = paused ? nil : inbox.pollShape
                if shape == nil || events.shape != shape {
                    thread.prepare(&events)
                    if !paused { inbox.addPollDescriptors(to: &events) }
                    events.shape = shape
                }
                ready = try thread.wait(&events, timeoutMilliseconds: timeout)
            }
        } catch {
            // Nothing to wait on: counted, said at most once a second, and a pause rather than a spin.
            let says = schedule.waitFailed(at: Sys.uptimeNanoseconds)
            sink.receiveFailed("waiting for the sockets of listener \(FileName.hex(id)) failed: \(error)", says: says)
            Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
            return true
        }
        // What a wait in a read brought before a stop is handed over as a round's reads are, then the loop ends.
        if thread.isStopping && received.isEmpty { return false }
        if ready > 0 {
            if !readInWait { inbox.receiveReady(events.dropFirst(), into: &received) }
            if !drain.keepIfWaiting(received) { hand(received) }
            // Emptied at once: an idle listener keeps no frame alive (a shared frame's mapped userInfo). One frame
            // at a time, keeping the array's room: `removeAll(keepingCapacity:)` goes through Array's generic
            // replacement of a range, which costs 90 instructions more than a round's one frame popped (and a
            // test of the count to choose between the two cost more than it saved). Where a hand-over kept the
            // frames, the array is shared: the first pop copies it once, to exactly its count.
            while received.popLast() != nil {}
            if thread.isStopping { return false }
        }
        let round = schedule.begin(at: Sys.uptimeNanoseconds, ready: ready, timeout: timeout)
        // The hand-over goes on when the observers have room. Meanwhile the sockets are not polled or bound anew,
        // and the spool is not looked at; what is read all the same (a datagram inbox's sealed sockets) goes
        // after the hand-over (``SpoolDrain/keepIfWaiting(_:)``).
        if handingOver {
            if !backlog.isOver { drain.resume() }
            schedule.paused()
            if round.housekeepingDue { sink.keepHouse(for: self) }
            return true
        }
        // A wait for observers that ended in this round goes on to the drain below, with nothing read from the
        // sockets before it: what they hold comes after the spool's backlog.
        if backlog.isOver || (readingWait != nil && thread.readingWait() != nil) {
            schedule.paused()
            if round.housekeepingDue { keepHouse(inbox, &drain, &schedule) }
            return true
        }
        var failure = inbox.boundSocketFailure
        var signs = ReceiveSchedule.SpoolSigns(
            recheckHeld: thread.takeRecheck(), suggestsSpooling: inbox.suggestsSpooling, drainWaiting: drain.isWaiting,
            socketFailed: failure != nil)
        if schedule.looksAtBell(signs), schedule.drains(bell: spool.bell.value, signs) {
            // The drain reads the sockets after the bell: what it read there came after this look.
            let outcome = drain.drain(inbox, includingHeld: signs.recheckHeld) { sink.warn("listener \(FileName.hex(id)) " + $0) }
            if outcome.heldNotOffered { thread.recheckLater() }
            signs.suggestsSpooling = inbox.suggestsSpooling
            schedule.drained(readMessages: outcome.readMessages, stillWaiting: drain.isWaiting, suggestsSpooling: signs.suggestsSpooling)
            failure = inbox.boundSocketFailure
        }
        if thread.isStopping { return false }
        // The socket posters reach failed (it is no longer polled): bound anew, at most once a second while the
        // failure persists.
        if let failure, schedule.rebindsFailedSocket() {
            sink.receiveFailed("socket of listener \(FileName.hex(id)) failed: \(failure); binding it again", says: true)
            keepSocketFile(inbox, force: true, &drain, &schedule)
        }
        if round.housekeepingDue { keepHouse(inbox, &drain, &schedule) }
        return true
    }

    /// Once a second: puts the socket file back if it was removed or replaced, tries again for a wake socket
    /// if there is none, and has the sink keep this process's registry entry.
    private func keepHouse(_ inbox: any Inbox, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule) {
        keepSocketFile(inbox, force: false, &drain, &schedule)
        if !hasWakeSocket { connectWakeSocket() }
        sink.keepHouse(for: self)
    }

    /// Whether the thread has a socket that wakes it from a wait in a read (``connectWakeSocket()``).
    private var hasWakeSocket: Bool { thread.hasWakeSocket }

    /// For a datagram listener: connects a socket to the one posters reach, which wakes the thread from a wait
    /// in its read (``ReceiveThread/waitInRead(_:)``). Only while the socket file is still the one bound: a socket
    /// connected to another would not wake it. Without one the thread polls, as for sequenced packets.
    private func connectWakeSocket() {
        guard transport == .datagram, let expected = socketFile.withLock({ $0 }) else { return }
        let socket: OwnedDescriptor
        do throws(WormholeError) {
            socket = try UnixSocket.connect(
                .datagram, directory: container.listenersDescriptor, directoryPath: container.listenersPath,
                name: RegistryEntry.socketName(id))
        } catch {
            return
        }
        // Closed as it goes when the file changed meanwhile.
        guard currentSocketFile() == expected else { return }
        thread.useWakeSocket(socket)
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
    private func hand(_ frames: [Frame]) {
        guard !frames.isEmpty else { return }
        sink.received(frames, by: self) { work in thread.runObserverCode(work) }
    }

    /// Puts the socket file back when it was removed or replaced (a cleaner of temporary files), or with `force`
    /// replaces the socket because it failed: binds a new socket under the name, and keeps reading what posters
    /// sent to the old one, which is handed over (or kept while taken segments wait). A rebind reads the old
    /// socket after the round's look at the bell: one more is owed.
    private func keepSocketFile(_ inbox: any Inbox, force: Bool, _ drain: inout SpoolDrain, _ schedule: inout ReceiveSchedule) {
        let expected = socketFile.withLock { $0 }
        guard force || currentSocketFile() != expected || expected == nil else { return }
        // A container moved or removed as a whole is the endpoint's to report; there is nothing to bind in.
        guard container.isAtItsPath else { return }
        InjectedFault.rebound()
        var frames: [Frame] = []
        do throws(WormholeError) {
            let fresh = force ? try bindAnew() : try Self.bind(id, identity: identity, transport: transport, in: container)
            inbox.rebind(fresh, into: &frames)
            socketFile.withLock { $0 = currentSocketFile() }
            // The wake socket reaches the old socket: one for the new.
            thread.useWakeSocket(nil)
            connectWakeSocket()
            if !force {
                sink.warn("socket file of listener \(FileName.hex(id)) was removed or replaced; bound it again")
            }
            schedule.rebound()
        } catch {
            sink.warn("socket file of listener \(FileName.hex(id)) is gone and cannot be bound again: \(error)")
        }
        if !drain.keepIfWaiting(frames) { hand(frames) }
    }
}
