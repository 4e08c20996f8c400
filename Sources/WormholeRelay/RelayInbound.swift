import Foundation
import Synchronization
import Wormhole

/// What comes from the other device: its notifications posted into this group in the order of their link
/// sequence, each once. Items that come ahead of one still on the way wait (within bounds); what was posted is
/// remembered per poster, so that a copy (a transfer repeated, a resend after a restart) is dropped, and logged
/// in the ``PostedLog`` as it is posted, so that a relay killed before it saved its state does not post it again.
///
/// It owns what the state file keeps of the other device (its id, its earlier ids, what of its notifications
/// was applied and posted), the items held early, and the posted log. It knows nothing of the link.
final class RelayInbound: Sendable {
    private struct State {
        /// The other device's relay id, as its envelopes say; 0 before the first.
        var peer: UInt64
        /// The other device's earlier relay ids, newest last (at most 8).
        var formerPeers: [UInt64]?
        /// The link sequence of the last item applied.
        var applied: UInt64
        /// For each poster on the other device, the highest sequence posted here.
        var posted: PosterMarks
        /// Items that came ahead of one still on its way, by link sequence.
        var early: [UInt64: RelayItem] = [:]
        var earlyBytes = 0
        var postedLog: PostedLog
    }

    private static let maximumEarly = Limits.relayEarlyItems

    private let center: GroupNotificationCenter
    private let routes: RelayRoutes
    private let replies: RelayReplyRoutes
    private let board: RelayStatusBoard
    /// This device's relay id.
    private let device: UInt64
    private let state: Mutex<State>

    init(
        peer: UInt64, formerPeers: [UInt64]?, applied: UInt64, posted: PosterMarks, postedLog: sending PostedLog,
        center: GroupNotificationCenter, routes: RelayRoutes, replies: RelayReplyRoutes, board: RelayStatusBoard,
        device: UInt64
    ) {
        state = Mutex(
            State(peer: peer, formerPeers: formerPeers, applied: applied, posted: posted, postedLog: postedLog))
        self.center = center
        self.routes = routes
        self.replies = replies
        self.board = board
        self.device = device
    }

    /// What the relay's state file keeps of the inbound side.
    func record(into relayState: inout RelayState) {
        let (peer, formerPeers, applied, posted) = state.withLock { ($0.peer, $0.formerPeers, $0.applied, $0.posted) }
        relayState.peer = peer
        relayState.formerPeers = formerPeers
        relayState.applied = applied
        relayState.posted = posted
    }

    /// What this side has applied of the other's, for the other; nil before anything came from it.
    var acknowledgement: Acknowledgement? {
        state.withLock { $0.peer == 0 ? nil : Acknowledgement(device: $0.peer, link: $0.applied) }
    }

    /// Whether a payload from the relay `sender` is taken: not one of this device's own, nor one from the
    /// other device's earlier relay id (dropped and counted). A new id of the other device's starts its
    /// numbering again.
    func accepts(from sender: UInt64) -> Bool {
        guard sender != device else { return false }
        enum Verdict { case taken, former, renewed }
        let verdict = state.withLock { state -> Verdict in
            if state.formerPeers?.contains(sender) == true { return .former }
            guard sender != state.peer else { return .taken }
            let renewed = state.peer != 0
            if renewed { state.formerPeers = Array(((state.formerPeers ?? []) + [state.peer]).suffix(8)) }
            // The other app, installed anew (or for the first time): its numbering starts again.
            state.peer = sender
            state.applied = 0
            state.posted = PosterMarks()
            state.early = [:]
            state.earlyBytes = 0
            return renewed ? .renewed : .taken
        }
        switch verdict {
        case .taken:
            return true
        case .renewed:
            RelayLog.write("the other device's relay changed identity; its numbering starts again")
            return true
        case .former:
            board.count { $0.dropped += 1 }
            RelayLog.write("a payload from the other device's earlier relay id dropped: what it held comes again under the new one")
            return false
        }
    }

    // MARK: Posting what the other device sent

    /// Posts `items` that are next in order, and holds those that came early; the relay's state is saved
    /// (`save`) once some were applied. Returns whether the other side is to be told (some were applied, or
    /// some came again).
    func apply(_ items: [RelayItem], save: () throws -> Void) -> Bool {
        let duplicates = state.withLock { state in
            for item in items
            where item.link > state.applied && item.link < Limits.relayHighestLink && state.early[item.link] == nil {
                let bytes = item.userInfo?.count ?? 0
                // Past the bounds, held back no more: the other side sends it again.
                guard item.link == state.applied + 1
                    || (state.early.count < Self.maximumEarly && state.earlyBytes + bytes <= Limits.relayEarlyBytes)
                else { continue }
                state.early[item.link] = item
                state.earlyBytes += bytes
            }
            return items.filter { $0.link <= state.applied }.count
        }
        if duplicates > 0 { board.count { $0.duplicatesDropped += duplicates } }
        var progressed = false
        while let item = nextInOrder() {
            post(item, save: save)
            state.withLock { $0.applied = item.link }
            progressed = true
        }
        if progressed {
            do {
                try save()
                state.withLock { $0.postedLog.clear() }
            } catch {
                RelayLog.write("relay state not saved: \(error)")
            }
        }
        return progressed || duplicates > 0
    }

    /// The item after the last applied, when it is here.
    private func nextInOrder() -> RelayItem? {
        state.withLock { state in
            guard let item = state.early.removeValue(forKey: state.applied + 1) else { return nil }
            state.earlyBytes -= item.userInfo?.count ?? 0
            return item
        }
    }

    private func post(_ item: RelayItem, save: () throws -> Void) {
        guard item.skipped != true else { return }
        let (fresh, peer) = state.withLock { state in
            (state.posted.advance(poster: item.poster, sequence: item.sequence), state.peer)
        }
        guard fresh else {
            board.count { $0.duplicatesDropped += 1 }
            return
        }
        guard let carried = routes.incoming(item.name) else {
            board.count { $0.dropped += 1 }
            RelayLog.write("\(item.name) from the other device is not routed to this one; dropped")
            return
        }
        var userInfo = item.userInfo.map { [UInt8]($0) }
        if carried == .request {
            guard let request = prepare(request: item) else { return }
            userInfo = request
        }
        do {
            // As the same poster and sequence each time it is posted: a copy posted again after a kill right
            // after the post is dropped by the listeners.
            try center.postRelayed(
                name: item.name, object: item.object, userInfo: userInfo, retain: false,
                stablePoster: device &* 0x9E37_79B9_7F4A_7C15 ^ peer, sequence: item.link)
            // At once: a relay killed after the post and before this record posts it again when it restarts.
            do {
                try state.withLock { state in
                    try state.postedLog.append(link: item.link, poster: item.poster, sequence: item.sequence)
                }
            } catch {
                RelayLog.write("relay log not written (\(error)); saving the state instead")
                try? save()
            }
            board.count { $0.posted += 1 }
        } catch {
            board.count { $0.dropped += 1 }
            RelayLog.write("\(item.name) from the other device not posted: \(error)")
        }
    }

    /// A request from the other side, stamped anew with the time it has left, and its replies' way back
    /// opened; nil (dropped and counted) when its time is up or it cannot be read.
    private func prepare(request item: RelayItem) -> [UInt8]? {
        do {
            let longest = Int64(Limits.maximumRequestTimeout / .nanoseconds(1))
            guard let remaining = item.remaining.map({ min($0, longest) }), remaining > 0, let archive = item.userInfo.map({ [UInt8]($0) }),
                let (replyTo, _) = GroupNotificationCenter.requestTimeLeft(archive)
            else { throw RelayLinkError(.failed, "its time is up, or it does not say where to reply") }
            let restamped = try GroupNotificationCenter.restampedRequest(archive, remaining: remaining)
            // Before the request is posted, so that no reply comes before its way back is open.
            try replies.open(replyTo, until: GroupNotificationCenter.uptimeNanoseconds + remaining)
            return restamped
        } catch {
            board.count { $0.dropped += 1 }
            RelayLog.write("request \(item.name) from the other device dropped: \(error)")
            return nil
        }
    }
}
