import Foundation
import Synchronization

/// A process's place in a container's registry: its listener's entry (written when its subscriptions change,
/// mended once a second), a durable identity's record, and the collection of listeners that died unnoticed.
final class Membership: Sendable {
    let container: Container
    /// Ephemeral, or a durable identity, whose registration and spool outlive its process.
    let identity: Identity
    let transport: SocketKind
    let registry: Registry
    private let counters: Counters
    /// Closes the links of listeners found dead.
    private let fanout: Fanout
    /// Lets one thread at a time write this process's registry entry.
    private let publishing = Mutex(())
    private let saidTooMany = Atomic<Bool>(false)
    private let containerRemoved = Atomic<Bool>(false)

    init(
        container: Container, identity: Identity, transport: SocketKind, registry: Registry,
        counters: Counters, fanout: Fanout
    ) {
        self.container = container
        self.identity = identity
        self.transport = transport
        self.registry = registry
        self.counters = counters
        self.fanout = fanout
    }

    /// Records a durable identity as running in `listener`, keeping the subscriptions of its last run (so that
    /// posters keep spooling for it while the process starts up).
    func claim(_ listener: UInt64) throws(WormholeError) {
        let snapshot = registry.snapshot()
        let stale = probeDeadListeners(except: listener)
        if snapshot.entry(listener) == nil { try checkRoom(snapshot, stale: stale) }
        let previous = try registry.currentEntry(listener)
        do throws(WormholeError) {
            try registry.write(RegistryEntry(
                listener: listener, pid: Sys.processID, subscriptions: previous?.subscriptions ?? [], identity: identity.clientIdentifier,
                lastSeen: Int64(Date().timeIntervalSince1970), transport: transport))
        } catch where error.isOutOfSpace && previous != nil {
            // A full disk, perhaps filled by this identity's own spool: its entry from the last run stays, so
            // posters go on spooling for it, and the listener runs, drains its spool (which frees space) and
            // writes its entry when it can (``mend(_:keepingLastRun:subscriptions:)``).
            Log.warning("listener \(FileName.hex(listener)) runs without updating its registry entry for now: \(error)")
        }
        removeDeadListeners(stale)
    }

    /// Takes `listener` out of the registry as its process stops observing; a durable identity's entry stays,
    /// marked offline, so that posters keep its spool filling.
    func leave(_ listener: UInt64) {
        guard identity.isDurable else {
            registry.remove(listener)
            return
        }
        if var entry = try? registry.currentEntry(listener) {
            entry.pid = 0
            entry.lastSeen = Int64(Date().timeIntervalSince1970)
            try? registry.write(entry)
        }
    }

    /// Writes `listener`'s entry with `subscriptions` (``entry(_:subscriptions:)``) when it changed. Writers of
    /// one process take turns, so that an older set is never written after a newer one.
    func publish(_ listener: UInt64, subscriptions: @autoclosure () -> [Subscription]) throws(WormholeError) {
        try publishing.withLock { (_) throws(WormholeError) in
            // On first registration, collect the entries of listeners that died unnoticed, so that a container
            // does not grow with every process that ever observed in it.
            let snapshot = registry.snapshot()
            // An entry this process cannot read now (out of descriptors) is neither new nor written: it throws.
            let isNew = try snapshot.entry(listener) == nil ? registry.currentEntry(listener) == nil : false
            let stale = isNew ? probeDeadListeners(except: listener) : []
            if isNew { try checkRoom(snapshot, stale: stale) }
            let entry = entry(listener, subscriptions: subscriptions())
            // Nothing to write when the entry says this already (one listing every name says it for any set).
            let stored = try isNew ? nil : registry.currentEntry(listener)
            if isNew || stored.map({
                $0.subscriptions != entry.subscriptions || $0.pid != entry.pid || $0.transport != entry.transport
            }) ?? true {
                try registry.write(entry)
            }
            removeDeadListeners(stale)
            if isNew { removeOrphanedSpools() }
        }
    }

    /// The entry `listener` should have now: its subscriptions, or, when they would not fit an entry file, one
    /// subscription to every name (posters then send it everything, and it keeps what it observes) beside its
    /// subscriptions to reserved names, which every name does not cover (a responder's mark, a reply name).
    private func entry(_ listener: UInt64, subscriptions: [Subscription]) -> RegistryEntry {
        var entry = RegistryEntry(
            listener: listener, pid: Sys.processID, subscriptions: subscriptions, identity: identity.clientIdentifier,
            lastSeen: identity.isDurable ? Int64(Date().timeIntervalSince1970) : 0, transport: transport)
        if RegistryFormat.encodedSize(of: entry) > Limits.maximumRegistryEntrySize {
            if !saidTooMany.exchange(true, ordering: .relaxed) {
                Log.warning("this process observes too many names to list in the registry; it registers for every name instead")
            }
            entry.subscriptions = [Subscription(name: nil, object: nil)]
                + subscriptions.filter { $0.name.map(ReservedNames.isReserved) ?? false }
            if RegistryFormat.encodedSize(of: entry) > Limits.maximumRegistryEntrySize {
                entry.subscriptions = [Subscription(name: nil, object: nil)]
            }
        }
        return entry
    }

    /// Once a second on the listener's thread: puts `listener`'s entry back if the registry lost it (a corrupt
    /// registry is rebuilt empty), and mends it if it differs from `subscriptions`. With `keepingLastRun` (a
    /// durable identity with no observer yet in this run) the entry keeps the subscriptions it has. While this
    /// process cannot read the registry (it is out of descriptors), the registry reads as it last did: an entry
    /// that cannot be read is not one lost, and nothing is written.
    func mend(_ listener: UInt64, keepingLastRun: Bool, subscriptions: @autoclosure () -> [Subscription]) {
        if !container.isAtItsPath {
            if !containerRemoved.exchange(true, ordering: .relaxed) {
                counters.count { $0.dropped += 1 }
                Log.warning("container \(container.path) was moved, removed or recreated; this process's observers hear only posts made to the folder it opened")
            }
            return
        }
        if keepingLastRun { return }
        let expected = entry(listener, subscriptions: subscriptions()).subscriptions
        guard let current = registry.snapshot().entry(listener) else {
            Log.warning("registry in \(container.path) lost this process's entry; registering again")
            try? publish(listener, subscriptions: expected)
            return
        }
        // A difference may only be an add or remove in flight; publishing again is harmless either way.
        // Or its entry still names the last run (a full disk kept this run from writing it as it claimed it).
        if current.subscriptions != expected || current.pid != Sys.processID {
            try? publish(listener, subscriptions: subscriptions())
        }
    }

    /// Removes listeners whose socket nobody listens on any more: their registry entries, links, socket and spool.
    func removeDeadListeners(_ dead: [UInt64]) {
        guard !dead.isEmpty else { return }
        for listener in dead { registry.remove(listener) }
        fanout.forget(dead)
        for listener in dead { Listener.removeFiles(of: listener, in: container) }
        counters.count { $0.listenersRemoved += dead.count }
    }

    /// Refuses a new listener when the container has its maximum already (listeners found dead aside).
    private func checkRoom(_ snapshot: RegistrySnapshot, stale: [UInt64]) throws(WormholeError) {
        guard snapshot.entries.count - stale.count < Limits.maximumListeners else {
            throw WormholeError(
                .tooManyListeners, "container \(container.path) already has \(Limits.maximumListeners) listeners")
        }
    }

    /// Listeners in the registry whose socket nobody listens on. A durable identity counts as dead only once
    /// unseen for ``GroupNotificationCenter/maximumDurableAge``.
    private func probeDeadListeners(except own: UInt64) -> [UInt64] {
        let now = Date().timeIntervalSince1970
        return registry.snapshot().entries.compactMap { entry in
            guard entry.listener != own else { return nil }
            if entry.isDurable && now - Double(entry.lastSeen) < Limits.maximumDurableAge { return nil }
            return ListenerProbe.probe(entry, in: container) == .gone ? entry.listener : nil
        }
    }

    /// Removes spool folders and socket files that belong to no registered listener and have not changed for a
    /// minute (a listener killed between creating them and registering).
    private func removeOrphanedSpools() {
        let registered = Set(registry.snapshot().entries.map(\.listener))
        func isOld(_ name: String, in directory: Descriptor) -> Bool {
            guard let status = try? Sys.status(name, relativeTo: directory, followLinks: false) else { return false }
            let limit = Limits.orphanAge.signedNanoseconds
            return status.ageNanoseconds > limit || status.ageNanoseconds < -limit
        }
        for name in (try? Sys.listDirectory(container.spoolDescriptor, limit: Limits.orphanedSpoolsPerPass)) ?? [] {
            guard let listener = FileName.value(ofHex: name), !registered.contains(listener),
                isOld(name, in: container.spoolDescriptor)
            else { continue }
            SpoolFolder.remove(listener: listener, in: container)
        }
        StoredFile.removeStaleTemporaries(
            in: container.listenersDescriptor, olderThan: Limits.orphanAge, prefixes: [StoredFile.temporaryPrefix, ".claim-", ".stale-"])
        StoredFile.removeStaleTemporaries(in: container.retainedDescriptor)
        registry.removeStaleTemporaries()
    }

    // MARK: Status, for tools

    /// Every listener in the registry: whether it listens now (probed), its process's state, and its spool's depth.
    func listenerStatus() -> [ListenerSurvey] {
        registry.snapshot().entries.map { entry in
            var state: ListenerSurvey.State
            switch ListenerProbe.probe(entry, in: container) {
            case .listening: state = .alive
            case .gone: state = .dead
            // A full backlog: it is not reading.
            case .busy, .unknown: state = .stopped
            }
            if state == .alive && ProcessState.of(entry.pid) == .stopped { state = .stopped }
            if state == .dead && entry.isDurable { state = .offline }
            let (spooledNotifications, spooledBytes) = spoolDepth(of: entry.listener)
            return ListenerSurvey(
                entry: entry, socketPath: container.listenersPath + "/" + entry.socketName, state: state,
                spooledNotifications: spooledNotifications, spooledBytes: spooledBytes)
        }
    }

    /// How many notifications wait in a listener's spool folder, and its bytes; reads the folder.
    private func spoolDepth(of listener: UInt64) -> (Int, Int) {
        guard let folder = try? SpoolFolder(listener: listener, in: container, create: false) else { return (0, 0) }
        let names = (try? Sys.listDirectory(folder.descriptor)) ?? []
        var count = 0
        for name in names where name.hasSuffix(SpoolFolder.segmentSuffix) || name.hasSuffix(SpoolFolder.takenSuffix)
            || name.hasPrefix(SpoolFolder.heldPrefix) || name.hasPrefix(SpoolFolder.returnedPrefix)
        {
            _ = folder.readSegment(name) { _ in count += 1 }
        }
        return (count, (try? folder.totalBytes()) ?? 0)
    }
}
