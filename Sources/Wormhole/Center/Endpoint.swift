import Foundation
import Synchronization

/// Everything one process keeps for one container, shared by all of its centers there: the registry cache, its
/// posting side (``Fanout``), its place in the registry (``Membership``), and, once anything observes, its own
/// listener and observers (``Delivery``).
final class Endpoint: Sendable {
    let container: Container
    /// The client identifier of a durable endpoint, whose registration and spool outlive its process.
    let identity: Identity
    let configuration: GroupNotificationCenter.Configuration
    let registry: Registry
    let retained: RetainedStore
    let counters: Counters
    private let fanout: Fanout
    private let membership: Membership
    private let delivery: Delivery
    private let nextObserverID = Atomic<UInt64>(1)
    /// When a post last made sure the container is still at its path, in uptime nanoseconds.
    private let containerChecked = Atomic<UInt64>(0)
    private let listener = Mutex<Listener?>(nil)
    /// Whether a durable endpoint has had an observer in this run: until then its registry entry keeps the
    /// subscriptions of its last run, so that posters keep spooling for it while the process starts up.
    private let adopted = Atomic<Bool>(false)

    /// Identifies this process's posts to receivers.
    var poster: UInt64 { fanout.poster }

    // MARK: One endpoint per container per process

    private final class WeakEndpoint: @unchecked Sendable {
        // Safe because it is read and written only under `table`'s lock.
        weak var endpoint: Endpoint?
        init(_ endpoint: Endpoint) { self.endpoint = endpoint }
    }

    private static let table = Mutex<[String: WeakEndpoint]>([:])
    /// The endpoint of the container at `path` (for `identity`, if durable), opened and checked on first use.
    /// An endpoint whose container was moved or recreated since is not reused.
    /// - Throws: ``WormholeError/Code/identityInUse`` when another live process runs `identity` there.
    static func shared(
        path: String, identity: Identity = .ephemeral, configuration: GroupNotificationCenter.Configuration = .init()
    ) throws(WormholeError) -> Endpoint {
        let container = try Container(path: path)
        let key = (Sys.realPath(path) ?? path) + (identity.clientIdentifier.map { "\u{0}" + $0 } ?? "")
            + "\u{0}\(configuration.maximumSpoolSize)/\(configuration.maximumContainerSpoolSize)/\(configuration.transport)"
        return try table.withLock { (table) throws(WormholeError) -> Endpoint in
            if let existing = table[key]?.endpoint, existing.container.identity == container.identity, existing.adopt() {
                return existing
            }
            let endpoint = Endpoint(container: container, identity: identity, configuration: configuration)
            if identity.isDurable { try endpoint.claimIdentity() }
            _ = endpoint.adopt()
            table[key] = WeakEndpoint(endpoint)
            return endpoint
        }
    }

    private init(container: Container, identity: Identity, configuration: GroupNotificationCenter.Configuration) {
        self.container = container
        self.identity = identity
        self.configuration = configuration
        let counters = Counters()
        self.counters = counters
        let registry = Registry(container: container) { counters.count { $0.dropped += 1 } }
        self.registry = registry
        retained = RetainedStore(container: container)
        let fanout = Fanout(container: container, configuration: configuration)
        self.fanout = fanout
        membership = Membership(
            container: container, identity: identity, transport: configuration.transport.socketKind, registry: registry,
            counters: counters, fanout: fanout)
        delivery = Delivery(counters: counters)
    }

    deinit {
        close()
    }

    /// How many centers use this endpoint; nil once it is closed.
    private let centers = Mutex<Int?>(0)

    /// Counts a new center; false when the endpoint is closed already.
    private func adopt() -> Bool {
        centers.withLock { count in
            guard let current = count else { return false }
            count = current + 1
            return true
        }
    }

    /// Called as a center goes away; the last one closes the endpoint.
    func centerClosed() {
        let last = centers.withLock { count -> Bool in
            guard let current = count else { return false }
            count = current > 1 ? current - 1 : nil
            return current <= 1
        }
        if last { close() }
    }

    /// Stops the listener without waiting for its receive thread (which finishes handing over what it has read,
    /// then ends) and takes this process out of the registry, or marks a durable identity offline. Runs once,
    /// when the last center goes away.
    private func close() {
        centers.withLock { $0 = nil }
        guard let listener = listener.withLock({ current in defer { current = nil }; return current }) else { return }
        listener.stop()
        membership.leave(listener.id)
    }

    /// Starts a durable endpoint's listener and records the identity as running, keeping the subscriptions of
    /// its last run until an observer is added in this one.
    private func claimIdentity() throws(WormholeError) {
        _ = try startListenerIfNeeded()
        guard let id = listener.withLock({ $0?.id }) else { return }
        try membership.claim(id)
    }

    /// Removes the registry entries, socket files and spools of `listeners`, found gone.
    func removeListeners(_ listeners: [UInt64]) {
        membership.removeDeadListeners(listeners)
    }

    /// This process's own spool folder in the container, once it listens.
    var listenerSpool: SpoolFolder? { listener.withLock { $0?.spool } }

    /// What this process's listener has read and not yet delivered, once it listens.
    var deliveryBacklog: DeliveryBacklog? { listener.withLock { $0?.backlog } }

    func makeObserverID() -> UInt64 {
        nextObserverID.add(1, ordering: .relaxed).newValue
    }

    // MARK: Posting

    /// Sends one notification to every matching listener and to this process's own matching observers.
    /// With `retain`, the notification is first stored as its name's current value.
    func post(name: String, object: String?, userInfo: [UInt8]?, retain: Bool = false) throws(WormholeError) -> PostReport {
        let frame = fanout.frame(name: name, object: object, userInfo: userInfo)
        let outgoing = OutgoingFrame(frame)
        if retain { try retained.store(outgoing.bytes, name: name) }
        counters.count { $0.posted += 1 }
        try checkContainerIsAtItsPath()
        let ownID = listener.withLock { $0?.id }
        var (report, gone) = fanout.send(
            outgoing, to: registry.snapshot(), generation: registry.parses.load(ordering: .relaxed), except: ownID)
        if ownID != nil, delivery.hasMatch(name: name, object: object) {
            deliver([frame], receivedBy: nil)
            report.delivered += 1
        }
        if !gone.isEmpty {
            membership.removeDeadListeners(gone.map(\.listener))
            report.removedDeadListeners = gone.count
        }
        counters.count {
            $0.delivered += report.delivered
            $0.spooled += report.spooled
            $0.failed += report.failures.count
        }
        for failure in report.failures {
            Log.warning("notification \(name) did not reach pid \(failure.pid): \(failure.error)")
        }
        return report
    }

    /// Refuses to post into a container whose path now names another folder (moved, removed or recreated):
    /// nobody there would hear it. Looked at once a tenth of a second.
    private func checkContainerIsAtItsPath() throws(WormholeError) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- containerChecked.load(ordering: .relaxed) > Registry.recheckInterval else { return }
        guard container.isAtItsPath else {
            throw WormholeError(
                .incompatibleContainer,
                "container \(container.path) was moved, removed or recreated after this process opened it; open a new center")
        }
        containerChecked.store(now, ordering: .relaxed)
    }

    // MARK: Observing

    /// Adds an observer; returns once every process that posts afterwards will reach it.
    func add(_ observer: Observer) {
        _ = delivery.add(observer)
        do throws(WormholeError) {
            _ = try startListenerIfNeeded()
            adopted.store(true, ordering: .relaxed)
            // Also when this subscription is not new: another thread adding it may still be writing it, and
            // publishing waits for that (and writes nothing when the entry says it already).
            try publishSubscriptions()
            // Posters read the registry's mark only so often: returns once each has to read it again.
            registry.settle()
            // A durable spool may hold what this observer waits for.
            listener.withLock { $0 }?.recheckHeldBack()
        } catch {
            Log.warning("observer of \(observer.subscription.name ?? "any name") is not registered in \(container.path): \(error); it sees only this process's posts")
        }
    }

    /// Removes the observers `shouldRemove` picks, and stops their pending deliveries. With `publish` false
    /// (a durable center going away), the registry keeps their subscriptions, so posters keep spooling for them.
    func remove(publish: Bool = true, where shouldRemove: (Observer) -> Bool) {
        let changed = delivery.remove(where: shouldRemove)
        if changed && publish { try? publishSubscriptions() }
    }

    /// Writes this process's subscriptions into its registry entry when they changed.
    private func publishSubscriptions() throws(WormholeError) {
        guard let id = listener.withLock({ $0?.id }) else { return }
        try membership.publish(id, subscriptions: delivery.subscriptions)
    }

    private func startListenerIfNeeded() throws(WormholeError) -> Bool {
        try listener.withLock { (current) throws(WormholeError) -> Bool in
            guard current == nil else { return false }
            let handlers = Listener.Handlers(
                frames: { [weak self] frames, listener in self?.deliver(frames, receivedBy: listener) },
                housekeeping: { [weak self] in self?.housekeeping() },
                dropped: { [weak self] count, reason in
                    self?.counters.count { $0.dropped += count }
                    Log.warning(reason)
                },
                warning: { Log.warning($0) },
                receiveError: { [weak self] reason, says in
                    self?.counters.count { $0.receiveErrors += 1 }
                    if says { Log.warning(reason) }
                },
                holdBack: { [weak self] frame in
                    self.map { endpoint in !endpoint.delivery.hasMatch(name: frame.name, object: frame.object) } ?? false
                })
            let started = try Listener(
                container: container, identity: identity, transport: configuration.transport.socketKind, handlers: handlers)
            started.start()
            current = started
            return true
        }
    }

    /// Once a second on the listener's thread: keeps this process's registry entry as it should be.
    private func housekeeping() {
        guard let id = listener.withLock({ $0?.id }) else { return }
        membership.mend(
            id, keepingLastRun: identity.isDurable && !adopted.load(ordering: .relaxed), subscriptions: delivery.subscriptions)
    }

    // MARK: Delivering

    /// Hands frames to the matching observers. Observers without a queue run on the receive thread: at once when
    /// called there, else once it wakes.
    /// `receiver` is the listener whose receive thread calls, or nil from elsewhere.
    func deliver(_ frames: [Frame], receivedBy receiver: Listener?) {
        let listener = receiver ?? self.listener.withLock { $0 }
        delivery.deliver(frames, backlog: listener?.backlog) { work in
            if let receiver {
                receiver.runObserverCode(work)
            } else if let listener {
                listener.perform(work)
            }
        }
    }

    /// The retained notification of `name` as an observer with `allowed` classes sees it, and which post it was.
    func retainedNotification(named name: String, allowed: AllowedClasses) -> (Notification, FrameIdentity)? {
        guard let frame = retained.load(name: name) else { return nil }
        return delivery.notification(frame, named: name, allowed: allowed)
    }
}
