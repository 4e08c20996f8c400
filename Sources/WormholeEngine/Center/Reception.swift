import Synchronization

/// This process's receiving side in one container: its listener, started with the first observer (at once for
/// a durable identity, which claims its identity), and what the listener's receive thread hands up to the
/// observers (``Delivery``). The listener calls it as its ``ListenerSink``.
final class Reception: ListenerSink {
    let container: Container
    let identity: Identity
    private let transport: SocketKind
    private let membership: Membership
    private let delivery: Delivery
    private let counters: Counters
    private let listener = Mutex<Listener?>(nil)
    /// The running listener's id, 0 while none runs (no listener's id is 0): set and cleared under `listener`'s
    /// lock, and read without it by every post.
    private let runningID = Atomic<UInt64>(0)
    /// Whether a durable identity has had an observer in this run: until then its registry entry keeps the
    /// subscriptions of its last run, so that posters keep spooling for it while the process starts up.
    private let adopted = Atomic<Bool>(false)

    init(
        container: Container, identity: Identity, transport: SocketKind, membership: Membership, delivery: Delivery,
        counters: Counters
    ) {
        self.container = container
        self.identity = identity
        self.transport = transport
        self.membership = membership
        self.delivery = delivery
        self.counters = counters
    }

    /// The listener's id, once it listens.
    var listenerID: UInt64? {
        let id = runningID.load(ordering: .acquiring)
        return id == 0 ? nil : id
    }

    /// The listener's own spool folder, once it listens.
    var spool: SpoolFolder? { listener.withLock { $0?.spool } }

    /// What the listener has read and not yet delivered, once it listens.
    var backlog: DeliveryBacklog? { listener.withLock { $0?.backlog } }

    /// Starts the listener unless it runs; with `observed`, records that an observer was added in this run.
    func listen(observed: Bool) throws(WormholeError) {
        try listener.withLock { (current) throws(WormholeError) in
            guard current == nil else { return }
            let started = try Listener(container: container, identity: identity, transport: transport, sink: self)
            // Known before its thread runs: what the thread hands up may meet a post that asks for it.
            runningID.store(started.id, ordering: .releasing)
            current = started
            started.start()
        }
        if observed { adopted.store(true, ordering: .relaxed) }
    }

    /// Keeps the registry entry as it is until an observer is added again: the housekeeping does not mend it to
    /// the observers there are now (observers removed without publishing, ``Endpoint/remove(publish:where:)``).
    func keepRegistration() {
        adopted.store(false, ordering: .relaxed)
    }

    /// Starts a durable identity's listener and records the identity as running, keeping the subscriptions of its
    /// last run until an observer is added in this one.
    func claimIdentity() throws(WormholeError) {
        try listen(observed: false)
        guard let id = listenerID else { return }
        try membership.claim(id)
    }

    /// An observer is being added: a durable listener whose spool holds something reads nothing meanwhile, so
    /// that nothing posted to the observer overtakes what the spool holds for it.
    func observerAdding() {
        listener.withLock { $0 }?.observerAdding()
    }

    /// A spooled frame held back for want of an observer may have one now: a durable listener hands its spool
    /// over once start-up code had the time to add the observers that follow (``Limits/handOverSettle``).
    func observerAdded() {
        listener.withLock { $0 }?.observerAdded()
    }

    /// Hands a durable listener's spool over to the observers added so far, without waiting for more.
    func handOverNow() {
        listener.withLock { $0 }?.handOverNow()
    }

    /// Stops the listener without waiting for its receive thread (which finishes handing over what it has read,
    /// then ends) and takes this process out of the registry, or marks a durable identity offline.
    func stop() {
        let stopped = listener.withLock { current in
            defer { current = nil }
            runningID.store(0, ordering: .releasing)
            return current
        }
        guard let listener = stopped else { return }
        listener.stop()
        membership.leave(listener.id)
    }

    /// Hands this process's own posts to its matching observers. Observers without a queue run on the receive
    /// thread, once it wakes.
    func deliverOwn(_ frames: [Frame]) {
        let listener = self.listener.withLock { $0 }
        if let work = delivery.deliverFromAnotherThread(frames, backlog: listener?.backlog), let listener {
            listener.perform(work)
        }
    }

    // MARK: What the listener hands up

    func received(_ frames: [Frame], by listener: Listener, runningObserverCode: (() -> Void) -> Void) {
        delivery.deliver(frames, backlog: listener.backlog, runningObserverCode: runningObserverCode)
    }

    func receivedFromSpool(
        _ frames: [Frame], by listener: Listener, acknowledging acknowledgement: SpoolAcknowledgement?,
        runningObserverCode: (() -> Void) -> Void
    ) -> [Frame] {
        delivery.deliver(
            frames, backlog: listener.backlog, keepingUnmatched: true, acknowledging: acknowledgement,
            runningObserverCode: runningObserverCode)
    }

    var observersRemoved: UInt64 { delivery.removals.load(ordering: .acquiring) }

    func holdsBack(_ frame: Frame) -> Bool {
        !delivery.hasMatch(name: frame.name, object: frame.object)
    }

    func dropped(_ count: Int, _ reason: String) {
        counters.count { $0.dropped += count }
        Log.warning(reason)
    }

    func warn(_ message: String) {
        Log.warning(message)
    }

    func receiveFailed(_ reason: String, says: Bool) {
        counters.count { $0.receiveErrors += 1 }
        if says { Log.warning(reason) }
    }

    /// Keeps this process's registry entry as it should be, while `listener` is the one that runs.
    func keepHouse(for listener: Listener) {
        guard self.listener.withLock({ $0 === listener }) else { return }
        membership.mend(
            listener.id, keepingLastRun: identity.isDurable && !adopted.load(ordering: .relaxed),
            subscriptions: delivery.subscriptions)
    }
}
