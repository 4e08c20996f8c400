import Foundation
import Synchronization

/// Everything one process keeps for one container, shared by all of its centers there: the registry cache,
/// the links to other listeners, and, once anything observes, its own listener and observers.
final class Endpoint: Sendable {
    let container: Container
    /// The client identifier of a durable endpoint, whose registration and spool outlive its process.
    let identity: String?
    let configuration: GroupNotificationCenter.Configuration
    let registry: Registry
    let retained: RetainedStore
    let counters: Counters
    /// Identifies this process's posts to receivers, with a sequence number per post.
    let poster: UInt64
    /// The frame that wakes a listener to look at its spool.
    private let nudge: [UInt8]
    private let sequence = Atomic<UInt64>(0)
    private let nextObserverID = Atomic<UInt64>(1)
    private let links = Mutex(Links())
    private let linksGeneration = Atomic<Int>(0)
    private let linkContext: PeerLink.Context
    /// When a post last made sure the container is still at its path, in uptime nanoseconds.
    private let containerChecked = Atomic<UInt64>(0)
    private let observers = Mutex(ObserverTable())
    private let listener = Mutex<Listener?>(nil)
    private let containerRemoved = Atomic<Bool>(false)
    /// Whether a durable endpoint has had an observer in this run: until then its registry entry keeps the
    /// subscriptions of its last run, so that posters keep spooling for it while the process starts up.
    private let adopted = Atomic<Bool>(false)

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
        path: String, identity: String? = nil, configuration: GroupNotificationCenter.Configuration = .init()
    ) throws(WormholeError) -> Endpoint {
        let container = try Container(path: path)
        let key = (realPath(path) ?? path) + (identity.map { "\u{0}" + $0 } ?? "")
            + "\u{0}\(configuration.maximumSpoolSize)/\(configuration.maximumContainerSpoolSize)"
        return try table.withLock { (table) throws(WormholeError) -> Endpoint in
            if let existing = table[key]?.endpoint, existing.container.identity == container.identity, existing.adopt() {
                return existing
            }
            let endpoint = Endpoint(container: container, identity: identity, configuration: configuration)
            if identity != nil { try endpoint.claimIdentity() }
            _ = endpoint.adopt()
            table[key] = WeakEndpoint(endpoint)
            return endpoint
        }
    }

    private init(container: Container, identity: String?, configuration: GroupNotificationCenter.Configuration) {
        self.container = container
        self.identity = identity
        self.configuration = configuration
        let counters = Counters()
        self.counters = counters
        registry = Registry(container: container, counters: counters)
        retained = RetainedStore(container: container)
        let poster = UInt64.random(in: 1...UInt64.max)
        self.poster = poster
        nudge = Frame.nudge(from: poster).encoded()
        let stamps = SegmentStamps()
        linkContext = PeerLink.Context(
            container: container, poster: poster, maximumSpoolSize: configuration.maximumSpoolSize,
            budget: SpoolBudget(container: container, limit: configuration.maximumContainerSpoolSize),
            nextSegmentStamp: { stamps.next() })
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

    /// Stops the listener (it first finishes handing over what it has read, so a durable listener's spool holds
    /// nothing already handed over) and takes this process out of the registry, or marks a durable identity
    /// offline. Runs once, when the last center goes away.
    private func close() {
        centers.withLock { $0 = nil }
        guard let listener = listener.withLock({ current in defer { current = nil }; return current }) else { return }
        listener.stop()
        guard identity != nil else {
            registry.remove(listener.id)
            return
        }
        // A durable entry stays, with no process, so that posters keep its spool filling.
        if var entry = registry.currentEntry(listener.id) {
            entry.pid = 0
            entry.lastSeen = Int64(Date().timeIntervalSince1970)
            try? registry.write(entry)
        }
    }

    /// Starts a durable endpoint's listener and records the identity as running, keeping the subscriptions of
    /// its last run until an observer is added in this one.
    private func claimIdentity() throws(WormholeError) {
        _ = try startListenerIfNeeded()
        guard let id = listener.withLock({ $0?.id }) else { return }
        let snapshot = registry.snapshot()
        let stale = probeDeadListeners(except: id)
        if snapshot.entry(id) == nil { try checkRoom(snapshot, stale: stale) }
        let previous = registry.currentEntry(id)
        try registry.write(RegistryEntry(
            listener: id, pid: getpid(), subscriptions: previous?.subscriptions ?? [], identity: identity,
            lastSeen: Int64(Date().timeIntervalSince1970)))
        removeDeadListeners(stale)
    }

    /// This process's own spool folder in the container, once it listens.
    var listenerSpool: SpoolFolder? { listener.withLock { $0?.spool } }

    func makeObserverID() -> UInt64 {
        nextObserverID.add(1, ordering: .relaxed).newValue
    }

    // MARK: Posting

    /// Sends one notification to every matching listener and to this process's own matching observers.
    /// With `retain`, the notification is first stored as its name's current value.
    func post(name: String, object: String?, userInfo: [UInt8]?, retain: Bool = false) throws(WormholeError) -> PostReport {
        let number = sequence.add(1, ordering: .relaxed).newValue
        let frame = Frame(poster: poster, sequence: number, name: name, object: object, userInfo: userInfo)
        let bytes = frame.encoded()
        if retain { try retained.store(bytes, name: name) }
        counters.count { $0.posted += 1 }
        try checkContainerIsAtItsPath()
        var report = PostReport()
        let ownID = listener.withLock { $0?.id }
        let snapshot = registry.snapshot()
        pruneLinks(to: snapshot)
        var gone: [RegistryEntry] = []
        snapshot.forEachListener(matching: name, object: object) { entry in
            guard entry.listener != ownID else { return }
            switch link(to: entry).send(bytes, nudge: nudge) {
            case .direct:
                report.delivered += 1
            case .spooled:
                report.spooled += 1
            case .gone:
                gone.append(entry)
            case .failed(let error):
                report.failures.append(PostReport.Failure(pid: entry.pid, error: error))
            }
        }
        if ownID != nil, observers.withLock({ $0.hasMatch(name: name, object: object) }) {
            deliver([frame], onReceiveThread: false)
            report.delivered += 1
        }
        if !gone.isEmpty {
            removeDeadListeners(gone.map(\.listener))
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

    /// The links of this process, at most ``Limits/maximumLinks`` of them, and the listeners whose link was
    /// closed while it may have had frames in flight.
    private struct Links {
        var open: [UInt64: PeerLink] = [:]
        var closed: Set<UInt64> = []
        var uses: UInt64 = 0
    }

    /// Drops the links (and their sockets) of listeners that left the registry, once per registry change.
    private func pruneLinks(to snapshot: RegistrySnapshot) {
        let generation = registry.parses.load(ordering: .relaxed)
        guard linksGeneration.exchange(generation, ordering: .relaxed) != generation else { return }
        let present = Set(snapshot.entries.map(\.listener))
        links.withLock { links in
            links.open = links.open.filter { present.contains($0.key) }
            links.closed = links.closed.filter { present.contains($0) }
        }
    }

    private func link(to entry: RegistryEntry) -> PeerLink {
        links.withLock { links in
            links.uses += 1
            if let link = links.open[entry.listener] {
                link.lastUse.store(links.uses, ordering: .relaxed)
                return link
            }
            if links.open.count >= Limits.maximumLinks,
                let oldest = links.open.min(by: { $0.value.lastUse.load(ordering: .relaxed) < $1.value.lastUse.load(ordering: .relaxed) })
            {
                links.open[oldest.key] = nil
                links.closed.insert(oldest.key)
            }
            // Frames of a closed link's connection may be unread: a new link spools until the listener drains.
            let link = PeerLink(
                listener: entry.listener, durable: entry.isDurable, context: linkContext,
                startsSpooling: links.closed.remove(entry.listener) != nil)
            link.lastUse.store(links.uses, ordering: .relaxed)
            links.open[entry.listener] = link
            return link
        }
    }

    /// Removes listeners whose socket nobody listens on any more: their registry entries, socket and spool.
    func removeDeadListeners(_ dead: [UInt64]) {
        guard !dead.isEmpty else { return }
        for listener in dead { registry.remove(listener) }
        links.withLock { links in
            for listener in dead {
                links.open[listener] = nil
                links.closed.remove(listener)
            }
        }
        for listener in dead { Listener.removeFiles(of: listener, in: container) }
        counters.count { $0.listenersRemoved += dead.count }
    }

    /// Refuses a new listener when the container has its maximum already (listeners found dead aside).
    private func checkRoom(_ snapshot: RegistrySnapshot, stale: [UInt64]) throws(WormholeError) {
        guard snapshot.entries.count - stale.count < GroupNotificationCenter.maximumListeners else {
            throw WormholeError(
                .tooManyListeners, "container \(container.path) already has \(GroupNotificationCenter.maximumListeners) listeners")
        }
    }

    // MARK: Observing

    /// Adds an observer; returns once every process that posts afterwards will reach it.
    func add(_ observer: Observer) {
        let isNew = observers.withLock { $0.add(observer) }
        do throws(WormholeError) {
            let started = try startListenerIfNeeded()
            let adopting = identity != nil && !adopted.exchange(true, ordering: .relaxed)
            if isNew || started || adopting { try publishSubscriptions() }
            // A durable spool may hold what this observer waits for.
            listener.withLock { $0 }?.recheckHeldBack()
        } catch {
            Log.warning("observer of \(observer.subscription.name ?? "any name") is not registered in \(container.path): \(error); it sees only this process's posts")
        }
    }

    /// Removes the observers `shouldRemove` picks, and stops their pending deliveries. With `publish` false
    /// (a durable center going away), the registry keeps their subscriptions, so posters keep spooling for them.
    func remove(publish: Bool = true, where shouldRemove: (Observer) -> Bool) {
        let (removed, changed) = observers.withLock { $0.remove(where: shouldRemove) }
        removed.forEach { $0.deactivate() }
        if changed && publish { try? publishSubscriptions() }
    }

    private func startListenerIfNeeded() throws(WormholeError) -> Bool {
        try listener.withLock { (current) throws(WormholeError) -> Bool in
            guard current == nil else { return false }
            let handlers = Listener.Handlers(
                frames: { [weak self] frames in self?.deliver(frames, onReceiveThread: true) },
                housekeeping: { [weak self] in self?.housekeeping() },
                dropped: { [weak self] count, reason in
                    self?.counters.count { $0.dropped += count }
                    Log.warning(reason)
                },
                holdBack: { [weak self] frame in
                    self.map { endpoint in !endpoint.observers.withLock { $0.hasMatch(name: frame.name, object: frame.object) } } ?? false
                })
            let started = try Listener(container: container, identity: identity, handlers: handlers)
            started.start()
            current = started
            return true
        }
    }

    /// Writes this process's subscriptions into its registry entry (``entryToPublish(_:)``) when they changed.
    /// Writers of one process take turns, so that an older set is never written after a newer one.
    private func publishSubscriptions() throws(WormholeError) {
        guard let id = listener.withLock({ $0?.id }) else { return }
        try publishing.withLock { (_) throws(WormholeError) in
            // On first registration, collect the entries of listeners that died unnoticed, so that a container
            // does not grow with every process that ever observed in it.
            let snapshot = registry.snapshot()
            let isNew = snapshot.entry(id) == nil && registry.currentEntry(id) == nil
            let stale = isNew ? probeDeadListeners(except: id) : []
            if isNew { try checkRoom(snapshot, stale: stale) }
            let entry = entryToPublish(id)
            // Nothing to write when the entry says this already (one listing every name says it for any set).
            if isNew || registry.currentEntry(id).map({ $0.subscriptions != entry.subscriptions || $0.pid != entry.pid }) ?? true {
                try registry.write(entry)
            }
            removeDeadListeners(stale)
            if isNew { removeOrphanedSpools() }
        }
    }

    /// Lets one thread at a time write this process's registry entry.
    private let publishing = Mutex(())
    private let saidTooMany = Atomic<Bool>(false)

    /// This process's registry entry as it should be now: its subscriptions, or, when they would not fit an entry
    /// file, one subscription to every name (posters then send it everything, and it keeps what it observes).
    private func entryToPublish(_ id: UInt64) -> RegistryEntry {
        var entry = RegistryEntry(
            listener: id, pid: getpid(), subscriptions: observers.withLock { $0.subscriptions }, identity: identity,
            lastSeen: identity == nil ? 0 : Int64(Date().timeIntervalSince1970))
        if RegistryFormat.encodedSize(of: entry) > Registry.maximumEntrySize {
            if !saidTooMany.exchange(true, ordering: .relaxed) {
                Log.warning("this process observes too many names to list in the registry; it registers for every name instead")
            }
            entry.subscriptions = [Subscription(name: nil, object: nil)]
        }
        return entry
    }

    /// Removes spool folders and socket files that belong to no registered listener and have not changed for a
    /// minute (a listener killed between creating them and registering).
    private func removeOrphanedSpools() {
        let registered = Set(registry.snapshot().entries.map(\.listener))
        let now = Int64(Date().timeIntervalSince1970)
        func isOld(_ name: String, in directory: CInt) -> Bool {
            guard let status = try? Sys.status(name, relativeTo: directory, followLinks: false) else { return false }
            return now - status.modifiedNanoseconds / 1_000_000_000 > 60
        }
        for name in (try? Sys.listDirectory(container.spoolDescriptor, limit: 10_000)) ?? [] {
            guard let listener = RegistryEntry.listener(fromName: name), !registered.contains(listener),
                isOld(name, in: container.spoolDescriptor)
            else { continue }
            SpoolFolder.remove(listener: listener, in: container)
        }
        StoredFile.removeStaleTemporaries(
            in: container.listenersDescriptor, olderThan: 60, prefixes: [StoredFile.temporaryPrefix, ".claim-", ".stale-"])
        StoredFile.removeStaleTemporaries(in: container.retainedDescriptor)
        registry.removeStaleTemporaries()
    }

    /// Listeners in the registry whose socket refuses connections. Probed outside the registry lock. A durable
    /// identity counts as dead only once unseen for ``GroupNotificationCenter/maximumDurableAge``.
    private func probeDeadListeners(except own: UInt64) -> [UInt64] {
        let now = Date().timeIntervalSince1970
        return registry.snapshot().entries.compactMap { entry in
            guard entry.listener != own else { return nil }
            if entry.isDurable && now - Double(entry.lastSeen) < GroupNotificationCenter.maximumDurableAge { return nil }
            do throws(WormholeError) {
                try UnixSocket.connect(
                    directory: container.listenersDescriptor, directoryPath: container.listenersPath,
                    name: entry.socketName
                ).close()
                return nil
            } catch where error.errno == ECONNREFUSED || error.errno == ENOENT {
                return entry.listener
            } catch {
                return nil
            }
        }
    }

    /// Once a second on the listener's thread: put this process's entry back if the registry lost it (a
    /// corrupt registry is rebuilt empty), and mend it if it differs from the observers.
    private func housekeeping() {
        guard let id = listener.withLock({ $0?.id }) else { return }
        if !container.isAtItsPath {
            if !containerRemoved.exchange(true, ordering: .relaxed) {
                counters.count { $0.dropped += 1 }
                Log.warning("container \(container.path) was moved, removed or recreated; this process's observers hear only posts made to the folder it opened")
            }
            return
        }
        if identity != nil && !adopted.load(ordering: .relaxed) { return }
        let expected = entryToPublish(id).subscriptions
        guard let entry = registry.snapshot().entry(id) else {
            Log.warning("registry in \(container.path) lost this process's entry; registering again")
            try? publishSubscriptions()
            return
        }
        // A difference may only be an add or remove in flight; publishing again is harmless either way.
        if entry.subscriptions != expected { try? publishSubscriptions() }
    }

    // MARK: Delivering

    /// Hands frames to the matching observers, decoding each userInfo once per set of allowed classes. Observers
    /// without a queue run on the receive thread: at once when called there, else once it wakes.
    func deliver(_ frames: [Frame], onReceiveThread: Bool) {
        var batch = DeliveryBatch()
        var received = 0
        var rejected = 0
        for frame in frames {
            let matches = observers.withLock { $0.matching(name: frame.name, object: frame.object) }
            guard !matches.isEmpty else { continue }
            received += 1
            var decoded: [String: [AnyHashable: Any]?] = [:]
            for observer in matches {
                var userInfo: [AnyHashable: Any]? = nil
                if let archive = frame.userInfo {
                    if let cached = decoded[observer.allowed.key] {
                        userInfo = cached
                    } else {
                        userInfo = decodeUserInfo(archive, of: frame.name, allowed: observer.allowed, rejected: &rejected)
                        decoded[observer.allowed.key] = .some(userInfo)
                    }
                }
                batch.add(observer, frame: frame, userInfo: userInfo)
            }
        }
        if received > 0 || rejected > 0 {
            counters.count {
                $0.received += received
                $0.userInfoRejected += rejected
            }
        }
        let listener = self.listener.withLock { $0 }
        batch.dispatch { work in
            if onReceiveThread {
                work()
            } else if let listener {
                listener.perform(work)
            }
        }
    }

    /// A frame's userInfo as an observer with `allowed` classes sees it: nil, with a warning, when refused.
    func decodeUserInfo(_ archive: [UInt8], of name: String, allowed: AllowedClasses, rejected: inout Int)
        -> [AnyHashable: Any]?
    {
        do throws(WormholeError) {
            return try KeyedArchiveDecoder.decodeUserInfo(archive, allowed: allowed)
        } catch {
            rejected += 1
            Log.warning("userInfo of \(name) withheld from an observer: \(error)")
            return nil
        }
    }

    /// The retained notification of `name` as an observer with `allowed` classes sees it, and which post it was.
    func retainedNotification(named name: String, allowed: AllowedClasses) -> (Notification, FrameIdentity)? {
        guard let frame = retained.load(name: name) else { return nil }
        var rejected = 0
        let userInfo = frame.userInfo.flatMap { decodeUserInfo($0, of: name, allowed: allowed, rejected: &rejected) }
        if rejected > 0 { counters.count { $0.userInfoRejected += rejected } }
        return (Notification(name: Notification.Name(name), object: frame.object, userInfo: userInfo), FrameIdentity(frame))
    }
}

private func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// Stamps the spool segments of one process: the wall clock in nanoseconds, strictly increasing.
private final class SegmentStamps: Sendable {
    private let last = Mutex<UInt64>(0)
    func next() -> UInt64 {
        last.withLock { last in
            last = max(last + 1, UInt64(max(0, wallClockNanoseconds())))
            return last
        }
    }
}
