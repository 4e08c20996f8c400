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
    private let linksGeneration = Atomic<Int>(0)
    private let linkContext: PeerLink.Context
    private let container: Container
    /// When a post last made sure the container is still at its path, in uptime nanoseconds.
    private let containerChecked = Atomic<UInt64>(0)
    /// Whether every new link starts by spooling: a relay's, which posts as stable posters that an earlier run of
    /// it posted as too. What that run left unread in a listener's socket must come before what this one sends,
    /// and a listener orders frames of another connection only against what was spooled.
    private let linksStartSpooling: Bool

    /// The links of this process, and the listeners whose link was closed while it may have had frames in flight.
    private struct Links {
        var open: [UInt64: PeerLink] = [:]
        var closed: Set<UInt64> = []
        var uses: UInt64 = 0
    }

    /// `skippedLease` counts a damaged lease this process's posts found in a listener's spool (once each).
    init(
        container: Container, configuration: GroupNotificationCenter.Configuration,
        skippedLease: @escaping @Sendable () -> Void
    ) {
        let poster = RelayMark.poster(relayed: configuration.marksPostsAsRelayed)
        linksStartSpooling = configuration.marksPostsAsRelayed
        self.poster = poster
        self.container = container
        nudge = Frame.nudge(from: poster).encoded()
        let stamps = SegmentStamps()
        linkContext = PeerLink.Context(
            container: container, poster: poster,
            lease: SpoolLease.Terms(
                poster: poster, limit: configuration.maximumSpoolSize, damage: LeaseDamage(count: skippedLease)),
            budget: SpoolBudget(container: container, limit: configuration.maximumContainerSpoolSize),
            nextSegmentStamp: { stamps.next() })
    }

    /// The next frame this process posts.
    func frame(name: String, object: String?, userInfo: [UInt8]?) -> Frame {
        let number = sequence.add(1, ordering: .relaxed).newValue
        return Frame(poster: poster, sequence: number, name: name, object: object, userInfo: userInfo)
    }

    /// Hands `frame` to every listener of `snapshot` that matches its name and object, but `own`. Returns what
    /// became of it, and the listeners found gone.
    func send(
        _ frame: OutgoingFrame, to snapshot: RegistrySnapshot, generation: Int, except own: UInt64?
    ) -> (report: PostReport, gone: [RegistryEntry]) {
        pruneLinks(to: snapshot, generation: generation)
        var report = PostReport()
        var gone: [RegistryEntry] = []
        snapshot.forEachListener(matching: frame.frame.name, object: frame.frame.object) { entry in
            guard entry.listener != own else { return }
            switch link(to: entry).send(frame, nudge: nudge) {
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
        return (report, gone)
    }

    /// Closes the links of listeners that are gone.
    func forget(_ listeners: [UInt64]) {
        links.withLock { links in
            for listener in listeners {
                links.open[listener] = nil
                links.closed.remove(listener)
            }
        }
    }

    /// Drops the links (and their sockets) of listeners that left the registry, once per registry change.
    private func pruneLinks(to snapshot: RegistrySnapshot, generation: Int) {
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
            // A link to a listener that registered anew with another transport is made anew.
            // Whether it keeps everything spooled is its identity's for good (a relay's): read when the link is made.
            if let link = links.open[entry.listener], link.transport == entry.transport {
                link.lastUse.store(links.uses, ordering: .relaxed)
                return link
            }
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
    }

    /// Refuses to post into a container whose path now names another folder (moved, removed or recreated):
    /// nobody there would hear it. Looked at once a tenth of a second.
    func checkContainerIsAtItsPath() throws(WormholeError) {
        let now = DispatchTime.now().uptimeNanoseconds
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
