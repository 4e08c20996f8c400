#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// The receive thread: waits on the inbox and the wake pipe, reads what posters sent through the socket, takes
/// what they spooled, and hands both over in the order posted.
extension Listener {
    func run() {
        guard let inbox = inbox.withLock({ $0.take() }) else { return }
        var reader = SpoolReader(folder: spool)
        var lastHousekeeping = DispatchTime.now().uptimeNanoseconds
        var lastBell: UInt64 = 0
        var lastBellLook: UInt64 = 0
        /// A look at the bell is owed within ``Limits/bellLook``: reads happened after the last look,
        /// and a poster that found the socket full could not nudge.
        var bellOwed = false
        /// A look at the bell is owed at once: a nudge came after the last look.
        var bellOwedNow = false
        var events: [pollfd] = []
        /// When the socket was last bound anew because it failed, in uptime nanoseconds.
        var lastForcedRebind: UInt64 = 0
        var lastWaitWarning: UInt64 = 0
        /// Set while segments taken from the spool wait for the inbox to be read whole: what is read meanwhile
        /// gathers here, to be handed over with them in order, since posters whose segment was taken went back
        /// to their sockets.
        var waiting: [Frame]? = nil
        /// Hands over frames read from the sockets, or keeps them with what waits.
        func route(_ frames: [Frame]) {
            guard !frames.isEmpty else { return }
            if waiting != nil { waiting?.append(contentsOf: frames) } else { sink.received(frames, by: self) }
        }
        // Each round in an autorelease pool of its own: the thread's own pool would drain only as it ends.
        while !stopping.load(ordering: .acquiring) {
            let goesOn = withAutoreleasePool { () -> Bool in
                // Observers' queues hold too much of what was read: read nothing more until they have worked it down
                // (they wake this thread), and posters fill the sockets, then the spool.
                let paused = backlog.isOver
                events.removeAll(keepingCapacity: true)
                events.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
                if !paused { inbox.addPollDescriptors(to: &events) }
                let fullTimeout = paused ? Limits.housekeepingInterval.milliseconds : inbox.pollTimeout ?? Limits.housekeepingInterval.milliseconds
                let timeout = paused ? fullTimeout
                    : bellOwedNow ? 0 : bellOwed ? min(fullTimeout, Limits.bellLook.milliseconds) : fullTimeout
                let ready: Int
                do throws(WormholeError) {
                    try InjectedFault.failPoll()
                    ready = try Sys.waitForEvents(&events, timeoutMilliseconds: timeout)
                } catch {
                    // Nothing to wait on: counted, said at most once a second, and a pause rather than a spin.
                    let now = DispatchTime.now().uptimeNanoseconds
                    let says = now &- lastWaitWarning >= Limits.repeatedWarningInterval.nanoseconds
                    if says { lastWaitWarning = now }
                    sink.receiveFailed("waiting for the sockets of listener \(FileName.hex(id)) failed: \(error)", says: says)
                    Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
                    return true
                }
                if stopping.load(ordering: .acquiring) { return false }

                if ready > 0 {
                    if events[0].revents != 0 {
                        drainWakePipe()
                        runPendingWork()
                        if stopping.load(ordering: .acquiring) { return false }
                    }
                    var frames: [Frame] = []
                    inbox.receiveReady(events.dropFirst(), into: &frames)
                    route(frames)
                    if stopping.load(ordering: .acquiring) { return false }
                }
                let now = DispatchTime.now().uptimeNanoseconds
                // A wait shortened for the bell that ends is no reason for housekeeping.
                let housekeepingDue = (ready == 0 && timeout == fullTimeout) || now - lastHousekeeping > Limits.housekeepingInterval.nanoseconds
                if backlog.isOver {
                    // The spool waits too; it is looked at as soon as there is room.
                    bellOwed = true
                    if housekeepingDue {
                        lastHousekeeping = now
                        var frames: [Frame] = []
                        _ = keepSocketFile(inbox, into: &frames)
                        route(frames)
                        sink.keepHouse(for: self)
                    }
                    return true
                }
                let recheckHeld = recheck.exchange(false, ordering: .acquiringAndReleasing)
                // The bell costs a read of a file: looked at when something suggests a poster spooled, and otherwise
                // at most ``Limits/bellLook`` after a wake-up that did not look (a poster whose socket was
                // full could not nudge).
                let looksAtBell = ready == 0 || bellOwedNow || housekeepingDue || recheckHeld || inbox.suggestsSpooling
                    || waiting != nil || now &- lastBellLook >= Limits.bellLook.nanoseconds
                bellOwed = !looksAtBell
                bellOwedNow = false
                if looksAtBell {
                    lastBellLook = now
                    let bell = spool.bell.value
                    if bell != lastBell || recheckHeld || housekeepingDue || waiting != nil {
                        // Not taken as seen while a failed socket keeps the drain from taking anything.
                        if inbox.boundSocketFailure == nil || waiting != nil { lastBell = bell }
                        // The drain reads the sockets after the bell: what it read there came after this look. A nudge
                        // among it rang the bell after the look; a poster whose nudge found the socket full may have.
                        // While taken segments wait, the next round tries again at its usual pace, not at once.
                        if drainSpool(inbox, &reader, includingHeld: recheckHeld, waiting: &waiting), waiting == nil {
                            bellOwedNow = inbox.suggestsSpooling
                            bellOwed = !bellOwedNow
                        }
                    }
                }
                if stopping.load(ordering: .acquiring) { return false }
                // The socket posters reach failed (it is no longer polled): bound anew, at most once a second
                // while the failure persists.
                if let failure = inbox.boundSocketFailure, lastForcedRebind == 0 || now &- lastForcedRebind >= Limits.forcedRebindInterval.nanoseconds {
                    lastForcedRebind = now
                    sink.receiveFailed("socket of listener \(FileName.hex(id)) failed: \(failure); binding it again", says: true)
                    var frames: [Frame] = []
                    if keepSocketFile(inbox, force: true, into: &frames) { bellOwed = true }
                    route(frames)
                }
                if housekeepingDue {
                    lastHousekeeping = now
                    // A rebind reads the old socket after this round's look: one more is owed.
                    var frames: [Frame] = []
                    if keepSocketFile(inbox, into: &frames) { bellOwed = true }
                    route(frames)
                    sink.keepHouse(for: self)
                }
                return true
            }
            if !goesOn { break }
        }
        // A durable listener's socket stayed in place while it ended (no other process may claim the identity
        // meanwhile): its name goes now, and what posters sent to it until then is read once more and handed over
        // (or held for the identity's next run), with what was read while taken segments waited, in order.
        if identity.isDurable {
            removeSocketFile()
            // Sealed first: a poster still connected then fails and spools rather than send what would be lost.
            inbox.seal()
            var last = waiting ?? []
            // Each read stops at a round's budget: read on while there is more (a failed socket gives nothing).
            var reads = 1
            while !inbox.receiveAll(into: &last), inbox.readAny, reads < 16 { reads += 1 }
            if !last.isEmpty || waiting != nil {
                handOver(reader.take(includingHeld: false, newSegments: false), direct: last, &reader)
            }
        } else if let waiting {
            // Stopping while taken segments wait: what was read is handed over with them, rather than lost.
            handOver(reader.take(includingHeld: false, newSegments: false), direct: waiting, &reader)
        }
    }

    /// Takes what posters spooled, then reads everything the inbox holds, and hands both over in the order
    /// posted (``SpoolReader/handOver(_:direct:_:)``). If the inbox cannot read everything now (connections
    /// not accepted for want of descriptors, a socket that failed), the segments taken wait for a later round,
    /// and what was read gathers in `waiting` until then: a poster whose segment was taken goes back to its
    /// socket, and what it sends there must not overtake what it spooled. Returns whether the sockets had any
    /// message, taken or dropped.
    private func drainSpool(
        _ inbox: any Inbox, _ reader: inout SpoolReader, includingHeld: Bool, waiting: inout [Frame]?
    ) -> Bool {
        // Its socket failed and nothing was taken yet: what waits there may precede what was spooled. Nothing is
        // taken until the socket is bound again, so posters keep spooling. Held frames are offered then.
        if inbox.boundSocketFailure != nil && waiting == nil {
            if includingHeld { recheck.store(true, ordering: .releasing) }
            return false
        }
        // Taken before and not handed over yet: nothing new is taken until it is.
        let taken = reader.take(includingHeld: includingHeld, newSegments: waiting == nil)
        StopPoint.reached("spool.drain")
        var direct = waiting ?? []
        waiting = nil
        guard inbox.receiveAll(into: &direct) else {
            if includingHeld { recheck.store(true, ordering: .releasing) }
            // Held in memory up to the backlog's bound; past it, handed over with what was taken as it is (what
            // waits unread in a socket may then come after what its poster spooled), rather than grow without end.
            let bound = DeliveryBacklog.Bound.standard
            if direct.count < bound.notifications && direct.reduce(0, { $0 + $1.byteCount }) < bound.bytes {
                waiting = direct
                return true
            }
            sink.warn("listener \(FileName.hex(id)) cannot read all its sockets and holds too much: handing over what it has")
            handOver(taken, direct: direct, &reader)
            return true
        }
        let hadAnything = inbox.readAny
        handOver(taken, direct: direct, &reader)
        return hadAnything
    }

    /// Hands over what was taken from the spool and what was read from the sockets, in the order posted.
    private func handOver(_ taken: SpoolReader.Taken, direct: [Frame], _ reader: inout SpoolReader) {
        let sink = self.sink
        reader.handOver(
            taken, direct: direct,
            SpoolReader.Handlers(
                deliver: { [self] frames in
                    sink.received(frames, by: self)
                    waitForRoom()
                },
                holdBack: { [identity] frame in identity.isDurable && sink.holdsBack(frame) },
                dropped: { sink.dropped($0, $1) },
                warning: { sink.warn($0) }))
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
        var events: [pollfd] = []
        var lastHousekeeping = DispatchTime.now().uptimeNanoseconds
        while backlog.isOver && !stopping.load(ordering: .acquiring) {
            events = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready: Int
            do throws(WormholeError) {
                ready = try Sys.waitForEvents(&events, timeoutMilliseconds: Limits.housekeepingInterval.milliseconds)
            } catch {
                sink.receiveFailed("waiting for the wake pipe of listener \(FileName.hex(id)) failed: \(error)", says: true)
                Sys.sleep(nanoseconds: Limits.bellLook.nanoseconds)
                ready = 0
            }
            if ready > 0 {
                drainWakePipe()
                runPendingWork()
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- lastHousekeeping >= Limits.housekeepingInterval.nanoseconds {
                lastHousekeeping = now
                sink.keepHouse(for: self)
            }
        }
    }

    private func drainWakePipe() {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { scratch.deallocate() }
        while let n = try? Sys.readSome(wakeRead, into: scratch), n > 0 {}
    }
}
