import Foundation
import Synchronization

/// The receive thread's loop: waits on the inbox and the wake pipe, reads what posters sent through the socket,
/// takes what they spooled, and hands both over in the order posted.
extension Listener {
    func run() {
        guard let inbox = inbox.withLock({ $0.take() }) else { return }
        var drain = SpoolDrain(folder: spool, handlers: spoolHandlers())
        var lastHousekeeping = DispatchTime.now().uptimeNanoseconds
        var lastBell: UInt64 = 0
        var lastBellLook: UInt64 = 0
        /// A look at the bell is owed within ``Limits/bellLook``: reads happened after the last look,
        /// and a poster that found the socket full could not nudge.
        var bellOwed = false
        /// A look at the bell is owed at once: a nudge came after the last look.
        var bellOwedNow = false
        var events = PollSet()
        /// When the socket was last bound anew because it failed, in uptime nanoseconds.
        var lastForcedRebind: UInt64 = 0
        var lastWaitWarning: UInt64 = 0
        /// What a round read from the sockets: its storage is kept from round to round.
        var received: [Frame] = []
        // Each round in an autorelease pool of its own: the thread's own pool would drain only as it ends.
        while !thread.isStopping {
            let goesOn = withAutoreleasePool { () -> Bool in
                // Observers' queues hold too much of what was read: read nothing more until they have worked it down
                // (they wake this thread), and posters fill the sockets, then the spool. A durable listener reads
                // nothing either until its first observer is added, nor while it waits for the observers that
                // follow before it hands its spool over: what is posted meanwhile stays behind the spool's backlog.
                let readingWait = identity.isDurable ? thread.readingWait() : nil
                let paused = backlog.isOver || readingWait != nil
                thread.prepare(&events)
                if !paused { inbox.addPollDescriptors(to: &events) }
                let pausedTimeout = readingWait.map { wait in
                    min(Limits.housekeepingInterval.milliseconds, CInt(clamping: wait / 1_000_000 + 1))
                } ?? Limits.housekeepingInterval.milliseconds
                let fullTimeout = paused ? pausedTimeout : inbox.pollTimeout ?? Limits.housekeepingInterval.milliseconds
                let timeout = paused ? fullTimeout
                    : bellOwedNow ? 0 : bellOwed ? min(fullTimeout, Limits.bellLook.milliseconds) : fullTimeout
                let ready: Int
                do throws(WormholeError) {
                    try InjectedFault.failPoll()
                    // Work handed to this thread runs in the wait, when it wakes.
                    ready = try thread.wait(&events, timeoutMilliseconds: timeout)
                } catch {
                    // Nothing to wait on: counted, said at most once a second, and a pause rather than a spin.
                    let now = DispatchTime.now().uptimeNanoseconds
                    let says = now &- lastWaitWarning >= Limits.repeatedWarningInterval.nanoseconds
                    if says { lastWaitWarning = now }
                    sink.receiveFailed("waiting for the sockets of listener \(FileName.hex(id)) failed: \(error)", says: says)
                    Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
                    return true
                }
                if thread.isStopping { return false }

                if ready > 0 {
                    received.removeAll(keepingCapacity: true)
                    inbox.receiveReady(events.dropFirst(), into: &received)
                    if !drain.keepIfWaiting(received) { hand(received) }
                    if thread.isStopping { return false }
                }
                let now = DispatchTime.now().uptimeNanoseconds
                // Once a second: a wait that ran out the whole interval, or the interval passed since. A shorter wait
                // that ends (for the bell, the inbox's own pause while it is out of descriptors, or the end of a wait
                // for observers) is no reason.
                let housekeepingDue = (ready == 0 && timeout == Limits.housekeepingInterval.milliseconds)
                    || now &- lastHousekeeping >= Limits.housekeepingInterval.nanoseconds
                // A wait for observers that ended in this round goes on to the drain below, with nothing read from
                // the sockets before it: what they hold comes after the spool's backlog.
                if backlog.isOver || (readingWait != nil && thread.readingWait() != nil) {
                    // The spool waits too; it is looked at as soon as there is room, or the wait for observers ends.
                    bellOwed = true
                    if housekeepingDue {
                        lastHousekeeping = now
                        var frames: [Frame] = []
                        _ = keepSocketFile(inbox, into: &frames)
                        if !drain.keepIfWaiting(frames) { hand(frames) }
                        sink.keepHouse(for: self)
                    }
                    return true
                }
                let recheckHeld = thread.takeRecheck()
                // The bell costs a read of a file: looked at when something suggests a poster spooled, and otherwise
                // at most ``Limits/bellLook`` after a wake-up that did not look (a poster whose socket was
                // full could not nudge).
                let looksAtBell = ready == 0 || bellOwedNow || housekeepingDue || recheckHeld || inbox.suggestsSpooling
                    || drain.isWaiting || now &- lastBellLook >= Limits.bellLook.nanoseconds
                bellOwed = !looksAtBell
                bellOwedNow = false
                if looksAtBell {
                    lastBellLook = now
                    let bell = spool.bell.value
                    if bell != lastBell || recheckHeld || housekeepingDue || drain.isWaiting {
                        // Not taken as seen while a failed socket keeps the drain from taking anything.
                        if inbox.boundSocketFailure == nil || drain.isWaiting { lastBell = bell }
                        // The drain reads the sockets after the bell: what it read there came after this look. A nudge
                        // among it rang the bell after the look; a poster whose nudge found the socket full may have.
                        // While taken segments wait, the next round tries again at its usual pace, not at once.
                        let outcome = drain.drain(inbox, includingHeld: recheckHeld) { sink.warn("listener \(FileName.hex(id)) " + $0) }
                        if outcome.heldNotOffered { thread.recheckLater() }
                        if outcome.readMessages, !drain.isWaiting {
                            bellOwedNow = inbox.suggestsSpooling
                            bellOwed = !bellOwedNow
                        }
                    }
                }
                if thread.isStopping { return false }
                // The socket posters reach failed (it is no longer polled): bound anew, at most once a second
                // while the failure persists.
                if let failure = inbox.boundSocketFailure, lastForcedRebind == 0 || now &- lastForcedRebind >= Limits.forcedRebindInterval.nanoseconds {
                    lastForcedRebind = now
                    sink.receiveFailed("socket of listener \(FileName.hex(id)) failed: \(failure); binding it again", says: true)
                    var frames: [Frame] = []
                    if keepSocketFile(inbox, force: true, into: &frames) { bellOwed = true }
                    if !drain.keepIfWaiting(frames) { hand(frames) }
                }
                if housekeepingDue {
                    lastHousekeeping = now
                    // A rebind reads the old socket after this round's look: one more is owed.
                    var frames: [Frame] = []
                    if keepSocketFile(inbox, into: &frames) { bellOwed = true }
                    if !drain.keepIfWaiting(frames) { hand(frames) }
                    sink.keepHouse(for: self)
                }
                return true
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
        drain.finish(last: last)
    }

    /// Where the spool drain hands frames: to the sink, waiting while the observers hold too much; a durable
    /// listener holds back what nothing in this process observes yet.
    private func spoolHandlers() -> SpoolReader.Handlers {
        let sink = self.sink
        return SpoolReader.Handlers(
            deliver: { [self] frames in
                hand(frames)
                waitForRoom()
            },
            holdBack: { [identity] frame in identity.isDurable && sink.holdsBack(frame) },
            dropped: { sink.dropped($0, $1) },
            warning: { sink.warn($0) })
    }

    /// Hands frames to the sink, and runs on this thread what the observers that run here make of them.
    private func hand(_ frames: [Frame]) {
        guard !frames.isEmpty else { return }
        sink.received(frames, by: self) { work in thread.runObserverCode(work) }
    }

    /// Puts the socket file back when it was removed or replaced (a cleaner of temporary files), or with `force`
    /// replaces the socket because it failed: binds a new socket under the name, and keeps reading what posters
    /// sent to the old one. Returns whether it bound anew.
    private func keepSocketFile(_ inbox: any Inbox, force: Bool = false, into frames: inout [Frame]) -> Bool {
        let expected = socketFile.withLock { $0 }
        guard force || currentSocketFile() != expected || expected == nil else { return false }
        // A container moved or removed as a whole is the endpoint's to report; there is nothing to bind in.
        guard container.isAtItsPath else { return false }
        InjectedFault.rebound()
        do throws(WormholeError) {
            let fresh = force ? try bindAnew() : try Self.bind(id, identity: identity, transport: transport, in: container)
            inbox.rebind(fresh, into: &frames)
            socketFile.withLock { $0 = currentSocketFile() }
            if !force {
                sink.warn("socket file of listener \(FileName.hex(id)) was removed or replaced; bound it again")
            }
            return true
        } catch {
            sink.warn("socket file of listener \(FileName.hex(id)) is gone and cannot be bound again: \(error)")
            return false
        }
    }

    /// Waits while the backlog is over its bound, in the middle of handing over a spool: nothing more is taken
    /// from it until the observers have worked the backlog down. Work handed to this thread still runs, and
    /// housekeeping still happens once a second; a stop ends the wait.
    private func waitForRoom() {
        var events = PollSet()
        var lastHousekeeping = DispatchTime.now().uptimeNanoseconds
        while backlog.isOver && !thread.isStopping {
            thread.prepare(&events)
            do throws(WormholeError) {
                _ = try thread.wait(&events, timeoutMilliseconds: Limits.housekeepingInterval.milliseconds)
            } catch {
                sink.receiveFailed("waiting for the wake pipe of listener \(FileName.hex(id)) failed: \(error)", says: true)
                Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- lastHousekeeping >= Limits.housekeepingInterval.nanoseconds {
                lastHousekeeping = now
                sink.keepHouse(for: self)
            }
        }
    }
}
