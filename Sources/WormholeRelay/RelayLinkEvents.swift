import Foundation
import Synchronization
import Wormhole

/// What the link reports, applied to the relay's parts: a change of its status (activation, pairing,
/// installation, reachability), a payload received (the other side's notifications, its acknowledgement of
/// this side's, its retained notifications and group values), a failure.
///
/// It owns what it knows of the other side's runs: a payload from a new run of the other side's relay means
/// that relay may have lost what it had been handed and not yet applied, so everything not acknowledged is
/// handed to the link again. It knows the link only as a ``RelayLink``.
final class RelayLinkEvents: Sendable {
    private let parts: RelayParts
    /// The run of the other side's relay that sent the last payload.
    private let peerSession = Mutex<UInt64>(0)

    init(_ parts: RelayParts) {
        self.parts = parts
    }

    /// Applies one event; on the relay's queue, while it runs.
    func handle(_ event: RelayLinkEvent) {
        switch event {
        case .statusChanged(let status):
            let was = parts.board.link
            parts.board.count { $0.link = status }
            if let error = Self.refusal(status), Self.refusal(was)?.code != error.code { parts.board.record(error) }
            if status.canQueue, !was.canQueue { parts.handAgain() }
            parts.pump()
            if status.canQueue { parts.values.updateContextIfChanged(ack: parts.inbound.acknowledgement) }
        case .transferFinished(_, let error):
            if let error { parts.board.record(error) }
        case .failed(let error):
            parts.board.record(error)
        case .received(let payload, _):
            receive(payload)
        }
    }

    /// What keeps a link in `status` from queueing, as the error a send would meet; nil when it queues. A link
    /// not activated yet is not counted: it is on its way.
    static func refusal(_ status: RelayLinkStatus) -> RelayLinkError? {
        switch status.activation {
        case .notActivated where status == .notActivated: return nil
        case .notActivated, .inactive: return RelayLinkError(.notActivated, "the link is \(status.activation.rawValue)")
        case .activated: break
        }
        if !status.isPaired { return RelayLinkError(.notPaired, "no counterpart device is paired") }
        if !status.isCounterpartInstalled { return RelayLinkError(.counterpartNotInstalled, "the counterpart app is not installed") }
        return nil
    }

    /// A payload from the other side: its acknowledgement, its notifications, its entries, in this order.
    private func receive(_ payload: Data) {
        let envelope: RelayEnvelope
        do {
            envelope = try RelayEnvelope.decode(payload)
        } catch {
            parts.board.count { $0.dropped += 1 }
            RelayLog.write("relay payload of \(payload.count) bytes dropped: \(error)")
            return
        }
        guard parts.inbound.accepts(from: envelope.device) else { return }
        // A new run of the other side's relay may have lost what it had been handed and not yet applied.
        let restarted = peerSession.withLock { session in
            defer { session = envelope.session }
            return envelope.session != session
        }
        if let ack = envelope.ack, ack.device == parts.device {
            parts.outbound.acknowledge(upTo: ack.link, save: parts.saveState)
        }
        if restarted { parts.handAgain() }
        if !envelope.items.isEmpty, parts.inbound.apply(envelope.items, save: parts.saveState) {
            parts.values.contextChanged()
            parts.outbound.sendAcknowledgement(parts.inbound.acknowledgement)
        }
        if let entries = envelope.entries {
            parts.values.apply(entries, ack: parts.inbound.acknowledgement, save: parts.saveState)
        }
        parts.pump()
        parts.values.updateContextIfChanged(ack: parts.inbound.acknowledgement)
    }
}
