import Dispatch
import Foundation
import Synchronization
import Wormhole

/// A relay's work, one step at a time on its queue, composed of its parts (``RelayParts``): what this group
/// posts is decided on (``RelayRoutes``) and goes into the outbox and over the link (``RelayOutbound``); what the
/// link reports (``RelayLinkEvents``) is posted here in order, once (``RelayInbound``); retained notifications and
/// group values are kept the same on both sides (``ValueSync``).
final class RelayEngine: Sendable {
    let routes: RelayRoutes
    private let parts: RelayParts
    private let events: RelayLinkEvents
    private let queue = DispatchQueue(label: "Wormhole.Relay")
    /// Which relay of this process it is (``RelayClaims``).
    private let key: RelayClaims.Key
    private let generation: UInt64
    private let flags = Mutex(Flags())

    private struct Flags {
        var closed = false
        var scanPending = false
    }

    /// The engine of the relay folder `folder` (`relay/<client identifier>/` in the container, open by
    /// descriptor), as the relay `key` of this process, the `generation`th there: made while ``RelayClaims`` holds
    /// the key, so that it alone writes the folder.
    init(
        folder: ContainerFolder, key: RelayClaims.Key, generation: UInt64, routes: [RelayRoute], link: any RelayLink,
        center: GroupNotificationCenter
    ) throws {
        self.routes = RelayRoutes(routes)
        self.key = key
        self.generation = generation
        parts = try RelayParts(folder: folder, routes: self.routes, link: link, center: center, queue: queue)
        events = RelayLinkEvents(parts)
        // A reply to a request this relay carried here goes back as this group's posts do.
        parts.replies.deliver { [weak self] in self?.taken($0) }
    }

    private var closed: Bool { flags.withLock { $0.closed } }

    // MARK: Starting and stopping

    func activate() {
        parts.link.activate { [weak self] event in
            guard let self else { return }
            self.queue.async {
                guard !self.closed else { return }
                self.events.handle(event)
            }
        }
        queue.async { self.scan() }
    }

    func close() {
        queue.sync {
            flags.withLock { $0.closed = true }
            // The ways back of the requests it carried close with it: a reply that comes later is not carried.
            parts.replies.closeAll()
        }
        parts.board.finish()
    }

    func tick() {
        queue.async {
            self.parts.replies.closeExpired(now: GroupNotificationCenter.uptimeNanoseconds)
            guard !self.closed else { return }
            self.parts.scan()
            self.parts.pump()
        }
    }

    func scanSoon() {
        queue.async {
            let pending = self.flags.withLock { flags in
                defer { flags.scanPending = true }
                return flags.scanPending
            }
            guard !pending else { return }
            self.queue.async {
                self.flags.withLock { $0.scanPending = false }
                self.scan()
            }
        }
    }

    private func scan() {
        guard !closed else { return }
        parts.scan()
    }

    // MARK: Taking what this group posts

    /// A notification this group posted, on the center's receive thread: written into the outbox before this
    /// returns, so that the durable hand-over counts it taken only once it is kept.
    func taken(_ note: RelayedNotification) {
        guard let carried = routes.outgoing(note) else { return }
        let kept = queue.sync { () -> Bool in
            guard !closed else { return false }
            keep(note, as: carried)
            return true
        }
        // Once closed: a block that began before its observer was removed may end after, and what the center
        // handed over here is gone from its spool. It is kept all the same, by this engine while no other relay
        // of this process ran on its folder since (the next start sends it), else by the one that runs there now.
        // A reply's way back closed with the relay.
        guard !kept, carried != .reply else { return }
        let late = RelayClaims.route(lateFor: key, generation: generation) { queue.sync { keep(note, as: carried) } }
        switch late {
        case .kept:
            break
        case .forward(let owner):
            owner.taken(note)
        case .lost:
            parts.board.count { $0.dropped += 1 }
            RelayLog.write("\(note.name) reached a closed relay after another one ran on its folder and closed; dropped")
        }
    }

    /// Writes a notification this group posted into the outbox, and hands the link what waits; on `queue`.
    private func keep(_ note: RelayedNotification, as carried: RelayRoutes.Carried) {
        // A reply goes back only for a request this side carried, while its time lasts.
        if carried == .reply, !parts.replies.isOpen(note.name) { return }
        guard parts.outbound.keep(note, as: carried), !closed else { return }
        parts.pump()
    }

    // MARK: Status

    var status: RelayStatus { parts.board.status(link: parts.link.status) }

    func statuses() -> AsyncStream<RelayStatus> {
        parts.board.statuses(first: status)
    }
}
