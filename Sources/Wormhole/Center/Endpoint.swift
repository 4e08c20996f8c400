import Foundation
import Synchronization

/// Everything one process keeps for one container, shared by all of its centers there: the registry cache,
/// the links to other listeners, and, once anything observes, its own listener and observers.
final class Endpoint: Sendable {
    let container: Container
    /// The client identifier of a durable endpoint, whose registration and spool outlive its process.
    let identity: String?
    let registry: Registry
    let retained: RetainedStore
    let counters = Counters()
    /// Identifies this process's posts to receivers, with a sequence number per post.
    let poster: UInt64
    /// The frame that wakes a listener to look at its spool.
    private let nudge: [UInt8]
    private let sequence = Atomic<UInt64>(0)
    private let nextObserverID = Atomic<UInt64>(1)
    private let links = Mutex<[UInt64: PeerLink]>([:])
    private let linksGeneration = Atomic<Int>(0)
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
    /// - Throws: ``WormholeError/Code/identityInUse`` when another live process runs `identity` there.
    static func shared(path: String, identity: String? = nil) throws(WormholeError) -> Endpoint {
        let container = try Container(path: path)
        let key = (realPath(path) ?? path) + (identity.map { "\u{0}" + $0 } ?? "")
        return try table.withLock { (table) throws(WormholeError) -> Endpoint in
            if let existing = table[key]?.endpoint { return existing }
            let endpoint = Endpoint(container: container, identity: identity)
            if identity != nil { try endpoint.claimIdentity() }
            table[key] = WeakEndpoint(endpoint)
            return endpoint
        }
    }

    private init(container: Container, identity: String?) {
        self.container = container
        self.identity = identity
        registry = Registry(container: container)
        retained = RetainedStore(container: container)
        poster = UInt64.random(in: 1...UInt64.max)
        nudge = Frame.nudge(from: poster).encoded()
    }

    deinit {
        guard let listener = listener.withLock({ $0 }) else { return }
        listener.stop()
        _ = try? registry.update { entries in
            guard identity != nil else {
                entries.removeAll { $0.listener == listener.id }
                return
            }
            // A durable entry stays, with no process, so that posters keep its spool filling.
            if let index = entries.firstIndex(where: { $0.listener == listener.id }) {
                entries[index].pid = 0
                entries[index].lastSeen = Int64(Date().timeIntervalSince1970)
            }
        }
    }

    /// Starts a durable endpoint's listener and records the identity as running, keeping the subscriptions of
    /// its last run until an observer is added in this one.
    private func claimIdentity() throws(WormholeError) {
        _ = try startListenerIfNeeded()
        guard let id = listener.withLock({ $0?.id }) else { return }
        let stale = probeDeadListeners(except: id)
        try registry.update { (entries) throws(WormholeError) in
            entries.removeAll { stale.contains($0.listener) }
            let now = Int64(Date().timeIntervalSince1970)
            if let index = entries.firstIndex(where: { $0.listener == id }) {
                entries[index].pid = getpid()
                entries[index].identity = identity
                entries[index].lastSeen = now
            } else {
                try Self.checkRoom(entries, container)
                entries.append(RegistryEntry(listener: id, pid: getpid(), subscriptions: [], identity: identity, lastSeen: now))
            }
        }
        removeFiles(of: stale)
    }

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

    /// Drops the links (and their sockets) of listeners that left the registry, once per registry change.
    private func pruneLinks(to snapshot: RegistrySnapshot) {
        let generation = registry.parses.load(ordering: .relaxed)
        guard linksGeneration.exchange(generation, ordering: .relaxed) != generation else { return }
        let present = Set(snapshot.entries.map(\.listener))
        links.withLock { links in links = links.filter { present.contains($0.key) } }
    }

    private func link(to entry: RegistryEntry) -> PeerLink {
        links.withLock { links in
            if let link = links[entry.listener] { return link }
            let link = PeerLink(listener: entry.listener, durable: entry.isDurable, container: container)
            links[entry.listener] = link
            return link
        }
    }

    /// Removes listeners whose socket nobody listens on any more: their registry entries, socket and spool.
    func removeDeadListeners(_ dead: [UInt64]) {
        let removed = try? registry.update { entries in
            let before = entries.count
            entries.removeAll { dead.contains($0.listener) }
            return before - entries.count
        }
        links.withLock { links in
            for listener in dead { links[listener] = nil }
        }
        for listener in dead { Listener.removeFiles(of: listener, in: container) }
        counters.count { $0.listenersRemoved += removed ?? 0 }
    }

    private func removeFiles(of stale: [UInt64]) {
        guard !stale.isEmpty else { return }
        for listener in stale { Listener.removeFiles(of: listener, in: container) }
        counters.count { $0.listenersRemoved += stale.count }
    }

    private static func checkRoom(_ entries: [RegistryEntry], _ container: Container) throws(WormholeError) {
        guard entries.count < GroupNotificationCenter.maximumListeners else {
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

    /// Writes this process's subscriptions into the registry. They are read under the registry's lock, so
    /// concurrent writers in one process cannot leave an older set behind.
    private func publishSubscriptions() throws(WormholeError) {
        guard let id = listener.withLock({ $0?.id }) else { return }
        // On first registration, collect the entries of listeners that died unnoticed, so that a container
        // does not grow with every process that ever observed in it.
        let stale = registry.snapshot().entry(id) == nil ? probeDeadListeners(except: id) : []
        try registry.update { (entries) throws(WormholeError) in
            entries.removeAll { stale.contains($0.listener) }
            let entry = RegistryEntry(
                listener: id, pid: getpid(), subscriptions: observers.withLock { $0.subscriptions }, identity: identity,
                lastSeen: identity == nil ? 0 : Int64(Date().timeIntervalSince1970))
            if let index = entries.firstIndex(where: { $0.listener == id }) {
                entries[index] = entry
            } else {
                try Self.checkRoom(entries, container)
                entries.append(entry)
            }
        }
        removeFiles(of: stale)
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
        if let status = try? Sys.status(of: container.descriptor), status.st_nlink == 0 {
            if !containerRemoved.exchange(true, ordering: .relaxed) {
                Log.warning("container \(container.path) was removed; this process's observers hear only its own posts")
            }
            return
        }
        if identity != nil && !adopted.load(ordering: .relaxed) { return }
        let expected = observers.withLock { $0.subscriptions }
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
