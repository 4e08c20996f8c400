import Foundation
import Synchronization

/// Everything one process keeps for one container, shared by all of its centers there: the registry cache, its
/// posting side (``Fanout``), its place in the registry (``Membership``), its observers (``Delivery``) and, once
/// anything observes, its listener (``Reception``).
package final class Endpoint: Sendable {
    package let container: Container
    /// Ephemeral, or a durable identity, whose registration and spool outlive its process.
    package let identity: Identity
    package let settings: EndpointSettings
    let registry: Registry
    package let retained: RetainedStore
    package let counters: Counters
    private let fanout: Fanout
    private let membership: Membership
    private let delivery: Delivery
    let reception: Reception
    private let nextObserverID = Atomic<UInt64>(1)

    /// Identifies this process's posts to receivers.
    var poster: UInt64 { fanout.poster }

    init(container: Container, identity: Identity, settings: EndpointSettings) {
        self.container = container
        self.identity = identity
        self.settings = settings
        let counters = Counters()
        self.counters = counters
        let registry = Registry(container: container) { counters.count { $0.dropped += 1 } }
        self.registry = registry
        retained = RetainedStore(container: container)
        let fanout = Fanout(container: container, settings: settings) { counters.count { $0.dropped += 1 } }
        self.fanout = fanout
        membership = Membership(
            container: container, identity: identity, transport: settings.transport, registry: registry,
            counters: counters, fanout: fanout)
        let delivery = Delivery(counters: counters)
        self.delivery = delivery
        reception = Reception(
            container: container, identity: identity, transport: settings.transport,
            membership: membership, delivery: delivery, counters: counters)
    }

    deinit {
        close()
    }

    /// How many centers use this endpoint.
    let centers = CenterCount()

    /// Called as a center goes away; the last one closes the endpoint.
    package func centerClosed() {
        if centers.release() { close() }
    }

    /// Stops the listener (``Reception/stop()``). Runs once, when the last center goes away.
    private func close() {
        centers.close()
        reception.stop()
    }

    /// Removes the registry entries, socket files and spools of `listeners`, found gone.
    package func removeListeners(_ listeners: [UInt64]) {
        membership.removeDeadListeners(listeners)
    }

    /// The registry's entries as this process last read it (read again when it changed).
    package func registryEntries() -> [RegistryEntry] {
        membership.registry.snapshot().entries
    }

    /// Every listener in the registry, with what the system says of it now.
    package func listenerStatus() -> [ListenerSurvey] {
        membership.listenerStatus()
    }

    /// This process's own spool folder in the container, once it listens.
    package var listenerSpool: SpoolFolder? { reception.spool }

    /// What this process's listener has read and not yet delivered, once it listens.
    package var deliveryBacklog: DeliveryBacklog? { reception.backlog }

    package func makeObserverID() -> UInt64 {
        nextObserverID.add(1, ordering: .relaxed).newValue
    }

    // MARK: Posting

    /// Sends one notification to every matching listener and to this process's own matching observers.
    /// With `retain`, the notification is first stored as its name's current value.
    ///
    /// `identity`, for a relay only, is the post's poster and sequence, the same each time the relay posts what
    /// it received (``RelayMark``); otherwise this process's next.
    package func post(
        name: String, object: String?, userInfo: [UInt8]?, retain: Bool = false, as identity: FrameIdentity? = nil
    ) throws(WormholeError) -> PostReport {
        // Made once and moved into the outgoing frame: every copy of a frame retains its strings and archive.
        let made: Frame
        if let identity {
            made = Frame(poster: identity.poster, sequence: identity.sequence, name: name, object: object, userInfo: userInfo)
        } else {
            made = fanout.frame(name: name, object: object, userInfo: userInfo)
        }
        let outgoing = OutgoingFrame(consume made)
        if retain { try retained.store(outgoing.bytes, name: name) }
        counters.count { $0.posted += 1 }
        // One look at the clock for both.
        let now = Sys.uptimeNanoseconds
        try fanout.checkContainerIsAtItsPath(now: now)
        let ownID = reception.listenerID
        var (report, gone) = fanout.send(outgoing, to: try registry.read(now: now), except: ownID)
        if ownID != nil, delivery.hasMatch(name: name, object: object) {
            reception.deliverOwn([outgoing.frame])
            report.delivered += 1
        }
        if !gone.isEmpty {
            membership.removeDeadListeners(gone)
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

    // MARK: Observing

    /// Adds an observer; returns once every process that posts afterwards will reach it.
    ///
    /// A durable spool may hold what this observer waits for: its listener reads nothing while the observer is
    /// added, and hands the spool over once start-up code had the time to add the observers that follow
    /// (``Limits/handOverSettle``), so that each gets the whole backlog, then what was posted meanwhile.
    package func add(_ observer: Observer) {
        add([observer])
    }

    /// Adds `observers` together: posters see their subscriptions in one change of the registry, never a part of
    /// them (``add(_:)``).
    package func add(_ observers: [Observer]) {
        guard let first = observers.first else { return }
        reception.observerAdding()
        for observer in observers { _ = delivery.add(observer) }
        defer { reception.observerAdded() }
        let name = first.subscription.name ?? "any name"
        do throws(WormholeError) {
            try reception.listen(observed: true)
        } catch {
            // This process's own posts reach its observers through the listener too.
            Log.warning("observer of \(name) receives no posts: no listener could start in \(container.path): \(error); the next observer added tries again")
            return
        }
        do throws(WormholeError) {
            // Also when this subscription is not new: another thread adding it may still be writing it, and
            // publishing waits for that (and writes nothing when the entry says it already).
            try publishSubscriptions()
            // Posters read the registry's mark only so often: returns once each has to read it again.
            registry.settle()
        } catch {
            Log.warning("observer of \(name) is not registered in \(container.path): \(error); it sees only this process's posts")
        }
    }

    /// Hands a durable spool over to the observers added so far, without waiting for more (``add(_:)``).
    package func handOverSpool() {
        reception.handOverNow()
    }

    /// Removes the observers `shouldRemove` picks, and stops their pending deliveries. With `publish` false
    /// (a durable center going away, a relay closing), the registry keeps their subscriptions, so posters keep
    /// spooling for them, until an observer is added again.
    package func remove(publish: Bool = true, where shouldRemove: (Observer) -> Bool) {
        let changed = delivery.remove(where: shouldRemove)
        guard changed else { return }
        if publish { try? publishSubscriptions() } else { reception.keepRegistration() }
    }

    /// Writes this process's subscriptions into its registry entry when they changed.
    private func publishSubscriptions() throws(WormholeError) {
        guard let id = reception.listenerID else { return }
        try membership.publish(id, subscriptions: delivery.subscriptions)
    }

    /// The retained notification of `name` as an observer with `allowed` classes sees it, which post it was, and
    /// its bytes.
    package func retainedNotification(named name: String, allowed: AllowedClasses) -> (Notification, FrameIdentity, Int)? {
        guard let frame = retained.load(name: name) else { return nil }
        return delivery.notification(frame, named: name, allowed: allowed)
    }
}
