import Foundation
import Synchronization
import Wormhole

/// Retained notifications and group values kept the same on both devices (``EntryLedger``: each write stamped,
/// the last one winning), carried by the context, the link's latest-only channel, which carries this side's
/// entries and what it has applied of the other's notifications.
///
/// It owns whether the context has to be handed over again. It knows the link only as a ``RelayLink``.
final class ValueSync: Sendable {
    private struct State {
        /// Whether the link holds an out-of-date context.
        var contextDirty = true
    }

    private let ledger: EntryLedger
    private let link: any RelayLink
    private let board: RelayStatusBoard
    /// This device's relay id, and this run (``RelayEnvelope/device``, ``RelayEnvelope/session``).
    private let device: UInt64
    private let session: UInt64
    private let state = Mutex(State())

    init(
        entries: [String: RelayState.EntryState], center: GroupNotificationCenter, routes: RelayRoutes,
        link: any RelayLink, board: RelayStatusBoard, device: UInt64, session: UInt64
    ) {
        ledger = EntryLedger(
            entries: entries, center: center, routes: routes, device: device, other: "the other device", log: RelayLog.write)
        self.link = link
        self.board = board
        self.device = device
        self.session = session
    }

    /// What the relay's state file keeps of the entries.
    func record(into relayState: inout RelayState) {
        relayState.entries = ledger.recorded
    }

    // MARK: This side's writes

    /// Stamps what changed here since the relay last looked; when the context is out of date, saves the relay's
    /// state (`save`) and hands the link the context, with `ack`.
    func scan(ack: Acknowledgement?, save: () throws -> Void) {
        if !ledger.scan().isEmpty { state.withLock { $0.contextDirty = true } }
        if state.withLock({ $0.contextDirty }) {
            try? save()
            updateContext(ack: ack)
        }
    }

    // MARK: The other side's writes

    /// Applies what the other side holds where it is later than what this side holds, after stamping what
    /// changed here; the relay's state is saved (`save`) around each write.
    func apply(_ entries: [SyncedEntry.Content], ack: Acknowledgement?, save: () throws -> Void) {
        scan(ack: ack, save: save)
        for incoming in entries {
            switch ledger.apply(incoming, save: save) {
            case .applied:
                board.count { $0.valuesApplied += 1 }
                state.withLock { $0.contextDirty = true }
            case .dropped:
                board.count { $0.dropped += 1 }
            case .unchanged:
                break
            }
        }
    }

    // MARK: The context

    /// Marks the context out of date: what it says changed (what this side applied), or the link may have lost it.
    func contextChanged() {
        state.withLock { $0.contextDirty = true }
    }

    /// Hands the link the context when it is out of date.
    func updateContextIfChanged(ack: Acknowledgement?) {
        if state.withLock({ $0.contextDirty }) { updateContext(ack: ack) }
    }

    /// Hands the link this side's context: what it has applied (`ack`), and its retained notifications and values.
    private func updateContext(ack: Acknowledgement?) {
        guard link.status.canQueue else { return }
        let entries = ledger.contents()
        var envelope = RelayEnvelope(device: device, session: session, ack: ack, entries: entries)
        do {
            var payload = try envelope.encoded()
            if payload.count > link.maximumPayloadSize(for: .context) {
                // Said once per change; the acknowledgement still goes, so that the other side's outbox empties.
                board.record(RelayLinkError(
                    .payloadTooLarge,
                    "the retained notifications and group values come to \(payload.count) bytes, over the link's \(link.maximumPayloadSize(for: .context))-byte context; they do not cross until they are smaller"))
                board.count { $0.dropped += 1 }
                envelope.entries = []
                payload = try envelope.encoded()
            }
            try link.updateContext(payload)
            state.withLock { $0.contextDirty = false }
        } catch let error as RelayLinkError {
            board.record(error)
        } catch {
            RelayLog.write("relay context not encoded: \(error)")
        }
    }
}
