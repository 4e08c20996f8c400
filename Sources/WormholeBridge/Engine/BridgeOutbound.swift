import Foundation
import Synchronization
import Wormhole
import WormholeEngine
import WormholeRelay

/// What this group posts under the bridge's routes, on its way to the server: each notification written into
/// the outbox (`bridge/<client identifier>/outbox/`, the relay's format) before the center counts it taken,
/// published in order, and forgotten once the server has stored it and the state says so.
final class BridgeOutbound: Sendable {
    private struct State {
        var outbox: Outbox
        var nextLink: UInt64
        var sent: PosterMarks
    }

    private let state: Mutex<State>
    /// Rung when something is put in the outbox.
    let bell = DispatchSemaphore(value: 0)

    init(outbox: sending Outbox, nextLink: UInt64, sent: PosterMarks) {
        state = Mutex(State(outbox: outbox, nextLink: nextLink, sent: sent))
    }

    /// What the state file keeps of the outbound side.
    func record(into bridgeState: inout BridgeState) {
        state.withLock { state in
            bridgeState.nextLink = state.nextLink
            bridgeState.sent = state.sent
        }
    }

    /// How many notifications wait to be published.
    var waiting: Int { state.withLock { $0.outbox.count } }

    /// Keeps a notification this group posted: in the outbox before this returns. One kept before (a durable
    /// hand-over again after a kill) is not kept twice.
    /// - Throws: When the outbox cannot be written: the center hands it over again.
    func keep(_ note: RelayedNotification) throws {
        try state.withLock { state in
            guard state.sent.isPast(poster: note.poster, sequence: note.sequence) else { return }
            let item = RelayItem(
                link: state.nextLink, poster: note.poster, sequence: note.sequence, name: note.name, object: note.object,
                userInfo: note.userInfo.map { Data($0) })
            try state.outbox.add(item)
            StopPoint.reached("bridge.kept")
            state.nextLink += 1
            _ = state.sent.advance(poster: note.poster, sequence: note.sequence)
        }
        bell.signal()
    }

    /// The items waiting, oldest first, at most `limit`.
    func next(_ limit: Int) -> [RelayItem] {
        state.withLock { Array($0.outbox.ordered.prefix(limit)) }
    }

    /// Forgets the items up to `link`: the server stored them, and the state saved says how far the numbering
    /// went.
    func published(upTo link: UInt64) {
        state.withLock { $0.outbox.acknowledge(upTo: link) }
    }
}
