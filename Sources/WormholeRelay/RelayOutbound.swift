import Dispatch
import Foundation
import Synchronization
import Wormhole

/// What goes to the other device: the notifications this group posted, kept in the ``Outbox`` until the other
/// side acknowledges them, and handed to the link in order, as many per payload as fit, by message while the
/// other side is reachable (a transfer if that fails) and by transfer otherwise.
///
/// It owns the outbox, its numbering (the link sequence of the next item) and what of each poster it holds, and
/// which items the link holds in this run. It knows the link only as a ``RelayLink``.
final class RelayOutbound: Sendable {
    private struct State {
        var outbox: Outbox
        /// The link sequence of the next notification put in the outbox.
        var nextLink: UInt64
        /// For each poster of this group, the highest sequence put in the outbox.
        var sent: PosterMarks
        /// The outbox items handed to the link in this run (or still held by the link from an earlier one):
        /// every one up to `handedThrough`, and those in `handed` after it.
        var handedThrough: UInt64 = 0
        var handed: Set<UInt64> = []
    }

    private let link: any RelayLink
    private let board: RelayStatusBoard
    /// This device's relay id, and this run (``RelayEnvelope/device``, ``RelayEnvelope/session``).
    private let device: UInt64
    private let session: UInt64
    /// Where a message's failure is handled: the relay's queue.
    private let queue: DispatchQueue
    private let state: Mutex<State>

    init(
        outbox: Outbox, nextLink: UInt64, sent: PosterMarks, link: any RelayLink, board: RelayStatusBoard,
        device: UInt64, session: UInt64, queue: DispatchQueue
    ) {
        state = Mutex(State(outbox: outbox, nextLink: nextLink, sent: sent))
        self.link = link
        self.board = board
        self.device = device
        self.session = session
        self.queue = queue
    }

    /// What the relay's state file keeps of the outbound side: the numbering and the posters.
    func record(into relayState: inout RelayState) {
        let (nextLink, sent) = state.withLock { ($0.nextLink, $0.sent) }
        relayState.nextLink = nextLink
        relayState.sent = sent
    }

    // MARK: Keeping

    /// Writes a notification this group posted into the outbox, carried as `carried` (a request with the time it
    /// has left). Returns whether it was written: then the link is to be handed what waits.
    func keep(_ note: RelayedNotification, as carried: RelayRoutes.Carried) -> Bool {
        var deadline: Int64? = nil
        if carried == .request {
            guard let archive = note.userInfo, let (_, remaining) = GroupNotificationCenter.requestTimeLeft(archive), remaining > 0 else {
                board.count { $0.dropped += 1 }
                RelayLog.write("request \(note.name) not carried: expired, or not a request the relay can read (its userInfo must hold value classes only)")
                return false
            }
            deadline = GroupNotificationCenter.uptimeNanoseconds + remaining
        }
        enum Outcome {
            case kept(waiting: Int)
            case again
            case full
            case failed(any Error)
        }
        let outcome = state.withLock { state -> Outcome in
            // Handed over again (a durable hand-over after a kill): it is in the outbox already.
            guard state.sent.isPast(poster: note.poster, sequence: note.sequence) else { return .again }
            guard state.outbox.count < Outbox.capacity else { return .full }
            let item = RelayItem(
                link: state.nextLink, poster: note.poster, sequence: note.sequence, name: note.name, object: note.object,
                userInfo: note.userInfo.map { Data($0) }, deadline: deadline)
            do {
                // The item is what counts: the numbering and the posters go on from it at the next start, and
                // the state is saved before an acknowledged item is removed.
                try state.outbox.add(item)
                state.nextLink += 1
                // Only once it is kept: one not kept is taken again if it is handed over again.
                _ = state.sent.advance(poster: note.poster, sequence: note.sequence)
            } catch {
                return .failed(error)
            }
            return .kept(waiting: state.outbox.count)
        }
        switch outcome {
        case .kept(let waiting):
            board.count { $0.waiting = waiting }
            return true
        case .again:
            return false
        case .full:
            board.count { $0.dropped += 1 }
            RelayLog.write("relay outbox holds \(Outbox.capacity) notifications; \(note.name) dropped")
            return false
        case .failed(let error):
            board.count { $0.dropped += 1 }
            RelayLog.write("\(note.name) not kept for the other device: \(error)")
            return false
        }
    }

    // MARK: Handing to the link

    /// Hands the link what it does not hold yet: by message while the other side is reachable (a transfer if
    /// that fails), by transfer otherwise, in order, as many per payload as fit, each payload with `ack`.
    /// Returns whether it handed anything.
    func pump(ack: Acknowledgement?) -> Bool {
        let status = link.status
        guard status.canQueue else { return false }
        let pending = state.withLock { state -> [RelayItem] in
            let pending = state.outbox.items(after: state.handedThrough).filter { !state.handed.contains($0.link) }
            guard let last = pending.last?.link else { return [] }
            // Handed in order from here on: everything up to the last is handed once these are.
            state.handedThrough = last
            state.handed = state.handed.filter { $0 > last }
            return pending
        }
        guard !pending.isEmpty else { return false }
        let channel: RelayChannel = status.isReachable ? .message : .transfer
        for batch in batches(of: pending, for: channel) {
            send(batch, over: channel, ack: ack)
        }
        return true
    }

    /// `items` in payloads that fit `channel`; an item that fits no payload of the transfer channel is replaced
    /// by a skip and reported.
    private func batches(of items: [RelayItem], for channel: RelayChannel) -> [[RelayItem]] {
        let limit = link.maximumPayloadSize(for: channel) - 256
        var batches: [[RelayItem]] = []
        var current: [RelayItem] = []
        var size = 0
        for var item in items {
            var itemSize = item.name.utf8.count + (item.object?.utf8.count ?? 0) + (item.userInfo?.count ?? 0) + 64
            if itemSize > link.maximumPayloadSize(for: .transfer) - 256 {
                let error = RelayLinkError(
                    .payloadTooLarge,
                    "\(item.name) (\(itemSize) bytes) does not fit the link's \(link.maximumPayloadSize(for: .transfer))-byte payloads; dropped")
                board.record(error)
                board.count { $0.dropped += 1 }
                let skipped = item.link
                state.withLock { try? $0.outbox.skip(skipped) }
                item = RelayItem(link: item.link, poster: 0, sequence: 0, name: "", skipped: true)
                itemSize = 64
            }
            if size + itemSize > limit, !current.isEmpty {
                batches.append(current)
                current = []
                size = 0
            }
            current.append(item)
            size += itemSize
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    private func send(_ batch: [RelayItem], over channel: RelayChannel, ack: Acknowledgement?) {
        let now = GroupNotificationCenter.uptimeNanoseconds
        // A request crosses with the time it has left now; one whose time is up crosses as a skip.
        let items = batch.map { item -> RelayItem in
            guard let deadline = item.deadline else { return item }
            guard deadline > now else {
                board.count { $0.dropped += 1 }
                RelayLog.write("request \(item.name) expired before it could cross")
                return RelayItem(link: item.link, poster: 0, sequence: 0, name: "", skipped: true)
            }
            var crossing = item
            crossing.deadline = nil
            crossing.remaining = deadline - now
            return crossing
        }
        let envelope = RelayEnvelope(device: device, session: session, items: items, ack: ack)
        let payload: Data
        do {
            payload = try envelope.encoded()
        } catch {
            RelayLog.write("relay payload not encoded: \(error)")
            return
        }
        board.count { $0.sent += items.count }
        if channel == .message, payload.count <= link.maximumPayloadSize(for: .message) {
            link.sendMessage(payload) { [weak self] error in
                guard let self, let error else { return }
                self.queue.async {
                    self.board.record(error)
                    // A message that may not have arrived goes as a transfer; a copy that did is dropped there.
                    self.transfer(payload, items: items)
                }
            }
        } else {
            transfer(payload, items: items)
        }
    }

    private func transfer(_ payload: Data, items: [RelayItem]) {
        do throws(RelayLinkError) {
            try link.transfer(payload)
        } catch {
            board.record(error)
            // Sent again when the link changes or on the next tick.
            unhand(items)
        }
    }

    /// Takes `items` back from what was handed, so that the next pump hands them again.
    private func unhand(_ items: [RelayItem]) {
        state.withLock { state in
            guard let first = items.first?.link, first <= state.handedThrough else { return }
            // What was handed after them stays handed.
            for item in state.outbox.items(after: first - 1) where item.link <= state.handedThrough {
                if !items.contains(where: { $0.link == item.link }) { state.handed.insert(item.link) }
            }
            state.handedThrough = first - 1
        }
    }

    /// After activation or a sign the other side restarted: what the link does not hold is handed to it again
    /// by the next pump.
    func handAgain() {
        var held = Set<UInt64>()
        for payload in link.outstandingTransfers {
            guard let envelope = try? RelayEnvelope.decode(payload) else { continue }
            for item in envelope.items { held.insert(item.link) }
        }
        state.withLock { state in
            state.handed = held
            state.handedThrough = (state.outbox.lowest ?? state.nextLink) - 1
        }
    }

    // MARK: Acknowledgements

    /// Forgets what the other device acknowledged: every item up to `link`. The relay's state is saved first
    /// (`save`), so that the numbers and posters of the items removed are never used again.
    func acknowledge(upTo link: UInt64, save: () throws -> Void) {
        guard state.withLock({ state in state.outbox.lowest.map { $0 <= link } ?? false }) else { return }
        do {
            try save()
        } catch {
            RelayLog.write("relay state not saved (\(error)); acknowledged notifications stay in the outbox")
            return
        }
        let waiting = state.withLock { state in
            state.outbox.acknowledge(upTo: link)
            state.handed = state.handed.filter { $0 > link }
            state.handedThrough = max(state.handedThrough, min(link, state.nextLink - 1))
            return state.outbox.count
        }
        board.count { $0.waiting = waiting }
    }

    /// Tells the other side at once what this side has applied of its notifications (`ack`), while it is
    /// reachable; the context says it too.
    func sendAcknowledgement(_ ack: Acknowledgement?) {
        guard link.status.isReachable, let ack else { return }
        let envelope = RelayEnvelope(device: device, session: session, ack: ack)
        guard let payload = try? envelope.encoded() else { return }
        link.sendMessage(payload) { _ in }
    }
}
