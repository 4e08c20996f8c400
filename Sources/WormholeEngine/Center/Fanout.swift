import Foundation
import Synchronization

/// The posting side of a process in one container: numbers its posts, and hands each frame to every matching
/// listener through a link of its own to that listener (its socket, else its spool). At most
/// ``Limits/maximumLinks`` links stay open.
final class Fanout: Sendable {
    /// Identifies this process's posts to receivers, with a sequence number per post.
    let poster: UInt64
    /// The frame that wakes a listener to look at its spool.
    private let nudge: [UInt8]
    private let sequence = Atomic<UInt64>(0)
    private let links = Mutex(Links())
    private let linkContext: PeerLink.Context
    private let container: Container
    /// When a post last made sure the container is still at its path, in uptime nanoseconds.
    private let containerChecked = Atomic<UInt64>(0)
    /// Whether every new link starts by spooling: a relay's, which posts as stable posters that an earlier run of
    /// it posted as too. What that run left unread in a listener's socket must come before what this one sends,
    /// and a listener orders frames of another connection only against what was spooled.
    private let linksStartSpooling: Bool

    /// The links of this process, the listeners whose link was closed while it may have had frames in flight, and
    /// the last route worked out. Whatever changes `open` forgets the route.
    private struct Links {
        var open: [UInt64: PeerLink] = [:]
        var closed: Set<UInt64> = []
        var uses: UInt64 = 0
        /// The registry generation the links were last pruned to.
        var generation = 0
        var route: Route?
    }

    /// Where the posts of one name and object go, worked out from one registry snapshot: each matching listener
    /// but this process's own, with its link. Used again while the registry's generation and the links stay as
    /// they were: a process mostly posts one name many times in a row.
    private final class Route: Sendable {
        /// A listener a post goes to: its id and pid, for the report, and this process's link to it.
        struct Target {
            let listener: UInt64
            let pid: Int32
            let link: PeerLink
        }

        let generation: Int
        let name: String
        let object: String?
        let own: UInt64?
        let targets: [Target]

        init(generation: Int, name: String, object: String?, own: UInt64?, targets: [Target]) {
            self.generation = generation
            self.name = name
            self.object = object
            self.own = own
            self.targets = targets
        }

        func serves(_ generation: Int, _ name: String, _ object: String?, _ own: UInt64?) -> Bool {
            self.generation == generation && self.own == own && self.name == name && self.object == object
        }
    }

    /// `skippedLease` counts a damaged lease this process's posts found in a listener's spool (once each).
    init(
        container: Container, settings: EndpointSettings,
        skippedLease: @escaping @Sendable () -> Void
    ) {
        let poster = RelayMark.poster(relayed: settings.marksPostsAsRelayed)
        linksStartSpooling = settings.marksPostsAsRelayed
        self.poster = poster
        self.container = container
        nudge = Frame.nudge(from: poster).encoded()
        let stamps = SegmentStamps()
        linkContext = PeerLink.Context(
            container: container, poster: poster,
            lease: SpoolLease.Terms(
                poster: poster, limit: settings.maximumSpoolSize, damage: LeaseDamage(count: skippedLease)),
            budget: SpoolBudget(container: container, limit: settings.maximumContainerSpoolSize),
            nextSegmentStamp: { stamps.next() })
    }

    /// The next frame this process posts.
    func frame(name: String, object: String?, userInfo: [UInt8]?) -> Frame {
        let number = sequence.add(1, ordering: .relaxed).newValue
        return Frame(poster: poster, sequence: number, name: name, object: object, userInfo: userInfo)
    }

    /// Hands `frame` to every listener of `snapshot` that matches its name and object, but `own`. Returns what
    /// became of it, and the listeners found gone.
    func send(_ frame: OutgoingFrame, to snapshot: RegistrySnapshot, except own: UInt64?) -> (report: PostReport, gone: [UInt64]) {
        var report = PostReport()
        var gone: [UInt64] = []
        func send(_ link: PeerLink, listener: UInt64, pid: Int32) {
            switch link.send(frame, nudge: nudge) {
            case .direct:
                report.delivered += 1
            case .spooled:
                report.spooled += 1
            case .gone:
                gone.append(listener)
            case .failed(let error):
                report.failures.append(PostReport.Failure(pid: pid, error: error))
            }
        }
        switch route(frame.frame.name, frame.frame.object, snapshot, except: own) {
        case .kept(let route):
            frame.goes(toListeners: route.targets.count)
            for target in route.targets { send(target.link, listener: target.listener, pid: target.pid) }
        case .tooMany(let entries):
            frame.goes(toListeners: entries.count)
            // A link at a time, as each may close another: no more than the most links stay open.
            for entry in entries {
                send(links.withLock { links in
                    links.uses += 1
                    return link(to: entry, &links)
                }, listener: entry.listener, pid: entry.pid)
            }
        }
        return (report, gone)
    }

    /// Closes the links of listeners that are gone.
    func forget(_ listeners: [UInt64]) {
        links.withLock { links in
            for listener in listeners {
                links.open[listener] = nil
                links.closed.remove(listener)
            }
            links.route = nil
        }
    }

    /// Where a post goes: a route, or, when more listeners match than links stay open, the listeners themselves.
    private enum Destinations {
        case kept(Route)
        case tooMany([RegistryEntry])
    }

    /// Where a post of `name` and `object` goes: the last route when it serves them, else a route worked out anew
    /// from `snapshot` (making the links it needs), each of its links counting as used now; or the matching
    /// listeners when there are more than ``Limits/maximumLinks``.
    private func route(_ name: String, _ object: String?, _ snapshot: RegistrySnapshot, except own: UInt64?) -> Destinations {
        links.withLock { links in
            links.uses += 1
            if let route = links.route, route.serves(snapshot.generation, name, object, own) {
                for target in route.targets { target.link.lastUse.store(links.uses, ordering: .relaxed) }
                return .kept(route)
            }
            // A post that read the registry before another thread's newer reading does not prune back to it.
            if snapshot.generation > links.generation { prune(&links, to: snapshot) }
            var entries: [RegistryEntry] = []
            snapshot.forEachListener(matching: name, object: object) { entry in
                if entry.listener != own { entries.append(entry) }
            }
            guard entries.count <= Limits.maximumLinks else { return .tooMany(entries) }
            let targets = entries.map { Route.Target(listener: $0.listener, pid: $0.pid, link: link(to: $0, &links)) }
            let route = Route(generation: snapshot.generation, name: name, object: object, own: own, targets: targets)
            // Made from the newest reading only: an older one is not kept over it.
            links.route = snapshot.generation == links.generation ? route : nil
            return .kept(route)
        }
    }

    /// Drops the links (and their sockets) of listeners that left the registry, once per registry generation.
    private func prune(_ links: inout Links, to snapshot: RegistrySnapshot) {
        links.generation = snapshot.generation
        let present = Set(snapshot.entries.map(\.listener))
        links.open = links.open.filter { present.contains($0.key) }
        links.closed = links.closed.filter { present.contains($0) }
        links.route = nil
    }

    /// The link to `entry`'s listener: the open one, or a new one.
    private func link(to entry: RegistryEntry, _ links: inout Links) -> PeerLink {
        // A link to a listener that registered anew with another transport is made anew.
        // Whether it keeps everything spooled is its identity's for good (a relay's): read when the link is made.
        if let link = links.open[entry.listener], link.transport == entry.transport {
            link.lastUse.store(links.uses, ordering: .relaxed)
            return link
        }
        links.route = nil
        if links.open.removeValue(forKey: entry.listener) != nil { links.closed.insert(entry.listener) }
        if links.open.count >= Limits.maximumLinks,
            let oldest = links.open.min(by: { $0.value.lastUse.load(ordering: .relaxed) < $1.value.lastUse.load(ordering: .relaxed) })
        {
            links.open[oldest.key] = nil
            links.closed.insert(oldest.key)
        }
        // Frames of a closed link's connection may be unread: a new link spools until the listener drains.
        let link = PeerLink(
            listener: entry.listener, transport: entry.transport, durable: entry.isDurable, context: linkContext,
            startsSpooling: links.closed.remove(entry.listener) != nil || linksStartSpooling, spoolsAlways: entry.keepsSpooled)
        link.lastUse.store(links.uses, ordering: .relaxed)
        links.open[entry.listener] = link
        return link
    }

    /// Refuses to post into a container whose path now names another folder (moved, removed or recreated):
    /// nobody there would hear it. Looked at once a tenth of a second.
    func checkContainerIsAtItsPath(now: UInt64 = Sys.uptimeNanoseconds) throws(WormholeError) {
        guard now &- containerChecked.load(ordering: .relaxed) > Limits.registryRecheck.nanoseconds else { return }
        guard container.isAtItsPath else {
            throw WormholeError(
                .incompatibleContainer,
                "container \(container.path) was moved, removed or recreated after this process opened it; open a new center")
        }
        containerChecked.store(now, ordering: .relaxed)
    }
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
