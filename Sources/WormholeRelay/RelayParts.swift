import Dispatch
import Foundation
import Wormhole

/// The parts of one relay, made from what its folder in the container holds, and the work that takes more than
/// one of them: saving the state file (each part keeps its share of it), handing the link what waits, handing it
/// everything again, looking for changed entries.
///
/// Every call is made on the relay's queue, one at a time; each part guards its own state all the same.
struct RelayParts: Sendable {
    let routes: RelayRoutes
    let link: any RelayLink
    let board: RelayStatusBoard
    let outbound: RelayOutbound
    let inbound: RelayInbound
    let values: ValueSync
    let replies: RelayReplyRoutes
    /// This device's relay id (``RelayState/device``), drawn once.
    let device: UInt64
    private let stateFile: StateFile

    /// The parts of the relay folder `folder` (`relay/<client identifier>/` in the container, open by
    /// descriptor), whose work runs on `queue`: what was posted after the state was last saved is folded into it,
    /// the outbox is read (renumbered for a new device id), and the state is saved.
    /// - Throws: When the outbox cannot be read or renumbered, or the state cannot be saved.
    init(
        folder: ContainerFolder, routes: RelayRoutes, link: any RelayLink, center: GroupNotificationCenter,
        queue: DispatchQueue
    ) throws {
        // Left by a run killed in the middle of a write: nobody else writes here.
        folder.removeTemporaries()
        stateFile = StateFile(folder: folder, name: "state", limit: RelayState.maximumFileSize)
        let loaded = RelayState.load(from: stateFile, log: RelayLog.write)
        var state = loaded.state
        var postedLog = PostedLog(folder: folder)
        // What was posted after the state was last saved.
        for record in postedLog.records(log: RelayLog.write) {
            state.applied = max(state.applied, record.link)
            _ = state.posted.advance(poster: record.poster, sequence: record.sequence)
        }
        var outbox = try Outbox(folder: try folder.folder("outbox", create: true), log: RelayLog.write)
        // A new device id: the other side numbers what comes from it from 1 again, and would hold items numbered
        // past that as early for ever.
        if loaded.isNew { try outbox.renumber() }
        // An item written before its state was: numbering and posters go on from the items.
        state.nextLink = max(state.nextLink, outbox.highest + 1)
        for item in outbox.ordered where item.skipped != true {
            _ = state.sent.advance(poster: item.poster, sequence: item.sequence)
        }
        try state.save(to: stateFile)
        postedLog.clear()
        let waiting = outbox.count
        let damaged = outbox.damaged

        self.routes = routes
        self.link = link
        device = state.device
        // This run, drawn at start: a context from it differs from the last run's.
        let session = UInt64.random(in: 1...UInt64.max)
        board = RelayStatusBoard()
        board.count {
            $0.waiting = waiting
            $0.dropped = damaged
        }
        replies = RelayReplyRoutes(containerURL: center.containerURL)
        outbound = RelayOutbound(
            outbox: outbox, nextLink: state.nextLink, sent: state.sent, link: link, board: board, device: device,
            session: session, queue: queue)
        inbound = RelayInbound(
            peer: state.peer, formerPeers: state.formerPeers, applied: state.applied, posted: state.posted,
            postedLog: postedLog, center: center, routes: routes, replies: replies, board: board, device: device)
        values = ValueSync(
            entries: state.entries, center: center, routes: routes, link: link, board: board, device: device,
            session: session)
    }

    /// Saves the relay's state: each part's share of it.
    func saveState() throws {
        var state = RelayState(device: device)
        outbound.record(into: &state)
        inbound.record(into: &state)
        values.record(into: &state)
        try state.save(to: stateFile)
    }

    /// Hands the link what waits, and the context after it when that changed.
    func pump() {
        let ack = inbound.acknowledgement
        if outbound.pump(ack: ack) { values.updateContextIfChanged(ack: ack) }
    }

    /// After activation or a sign the other side restarted: what the link does not hold is handed to it again,
    /// and so is the context.
    func handAgain() {
        outbound.handAgain()
        values.contextChanged()
    }

    /// Stamps the retained notifications and group values changed here since the relay last looked.
    func scan() {
        values.scan(ack: inbound.acknowledgement, save: saveState)
    }
}
