import Foundation
import Synchronization
import Wormhole

/// Retained notifications and group values kept the same on both devices: each write this group makes is
/// stamped (the time the relay saw it, the device breaking ties), what the other side holds is applied where its
/// stamp is later, and the context, the link's latest-only channel, carries this side's entries and what it has
/// applied of the other's notifications.
///
/// It owns the stamps of the entries (kept in the state file) and whether the context has to be handed over
/// again. It knows the link only as a ``RelayLink``.
final class ValueSync: Sendable {
    private struct State {
        /// The last write of each retained name and group value, stamped, and which local content it is.
        var entries: [String: RelayState.EntryState]
        /// Whether the link holds an out-of-date context.
        var contextDirty = true
    }

    private let center: GroupNotificationCenter
    private let routes: RelayRoutes
    private let link: any RelayLink
    private let board: RelayStatusBoard
    /// This device's relay id, and this run (``RelayEnvelope/device``, ``RelayEnvelope/session``).
    private let device: UInt64
    private let session: UInt64
    private let state: Mutex<State>

    init(
        entries: [String: RelayState.EntryState], center: GroupNotificationCenter, routes: RelayRoutes,
        link: any RelayLink, board: RelayStatusBoard, device: UInt64, session: UInt64
    ) {
        state = Mutex(State(entries: entries))
        self.center = center
        self.routes = routes
        self.link = link
        self.board = board
        self.device = device
        self.session = session
    }

    /// What the relay's state file keeps of the entries.
    func record(into relayState: inout RelayState) {
        relayState.entries = state.withLock { $0.entries }
    }

    // MARK: This side's writes

    /// Stamps what changed here since the relay last looked; when the context is out of date, saves the relay's
    /// state (`save`) and hands the link the context, with `ack`.
    func scan(ack: Acknowledgement?, save: () throws -> Void) {
        for entry in routes.sentEntries {
            guard let local = read(entry) else { continue }
            let known = state.withLock { $0.entries[entry.key] }
            if known?.mark == local.mark { continue }
            let noted: RelayState.EntryState
            if local.relayed, let known, known.mark == nil {
                // Written by this relay, which was stopped before it noted it.
                noted = .init(stamp: known.stamp, mark: local.mark)
            } else if local.relayed {
                noted = .init(stamp: known?.stamp ?? .zero, mark: local.mark)
            } else if known == nil, !local.content.present, neverWritten(entry) {
                // Nothing written here that this relay saw: no write, and never one that wins over the other
                // device's (a relay that scans late would otherwise undo a value set there meanwhile).
                noted = .init(stamp: .zero, mark: local.mark)
            } else {
                let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
                let after = known?.stamp.time ?? 0
                let stamp = Stamp(time: max(now, after == .max ? after : after + 1), device: device)
                noted = .init(stamp: stamp, mark: local.mark)
            }
            state.withLock { state in
                state.entries[entry.key] = noted
                state.contextDirty = true
            }
        }
        if state.withLock({ $0.contextDirty }) {
            try? save()
            updateContext(ack: ack)
        }
    }

    /// Whether `entry` was never written in this container, as far as can be told: a value with no version at
    /// all; a retained name with none now (a clear leaves nothing to tell it by).
    private func neverWritten(_ entry: SyncedEntry) -> Bool {
        switch entry.kind {
        case .retained: return true
        case .value: return (try? center.relayedValue(named: entry.name).newest) == 0
        }
    }

    /// The local content of `entry`: which it is, whether a relay wrote it, and what crosses.
    private func read(_ entry: SyncedEntry) -> (mark: String, relayed: Bool, content: SyncedEntry.Content)? {
        switch entry.kind {
        case .retained:
            guard let note = center.retainedRelayedNotification(named: entry.name) else {
                return ("none", false, .init(entry: entry, stamp: .zero, present: false))
            }
            return (
                "r\(note.poster)-\(note.sequence)", note.isRelayed,
                .init(entry: entry, stamp: .zero, present: true, object: note.object, archive: note.userInfo.map { Data($0) })
            )
        case .value:
            do {
                let value = try center.relayedValue(named: entry.name)
                return (
                    "v\(value.version)", value.isRelayed,
                    .init(entry: entry, stamp: .zero, present: value.archive != nil, archive: value.archive.map { Data($0) })
                )
            } catch {
                RelayLog.write("value \(entry.name) not read: \(error)")
                return nil
            }
        }
    }

    // MARK: The other side's writes

    /// Applies what the other side holds where it is later than what this side holds, after stamping what
    /// changed here; the relay's state is saved (`save`) around each write.
    func apply(_ entries: [SyncedEntry.Content], ack: Acknowledgement?, save: () throws -> Void) {
        scan(ack: ack, save: save)
        for incoming in entries {
            guard routes.receives(incoming.entry) else { continue }
            let known = state.withLock { $0.entries[incoming.entry.key] }
            guard incoming.stamp > (known?.stamp ?? .zero) else { continue }
            let lead = UInt64(Limits.relayStampLead / .milliseconds(1))
            guard incoming.stamp.time <= UInt64(max(0, Date().timeIntervalSince1970 * 1000)) + lead else {
                board.count { $0.dropped += 1 }
                RelayLog.write("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from the other device is stamped more than a day ahead of this device's clock; not applied")
                continue
            }
            // Noted before it is written: a relay stopped in between knows the write is its own.
            state.withLock { $0.entries[incoming.entry.key] = .init(stamp: incoming.stamp, mark: nil) }
            try? save()
            do {
                try write(incoming)
                board.count { $0.valuesApplied += 1 }
            } catch {
                board.count { $0.dropped += 1 }
                RelayLog.write("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from the other device not applied: \(error)")
                // Not written: what this side held stays noted as it was, so that it is not taken for a newer write.
                state.withLock { $0.entries[incoming.entry.key] = known }
                try? save()
                continue
            }
            // What the relay wrote, unless a write of this group came in between: that one stays unnoted, and the
            // next scan stamps it as this group's.
            if let local = read(incoming.entry), local.relayed || (!incoming.present && !local.content.present) {
                state.withLock { $0.entries[incoming.entry.key] = .init(stamp: incoming.stamp, mark: local.mark) }
            }
            try? save()
            state.withLock { $0.contextDirty = true }
        }
    }

    private func write(_ content: SyncedEntry.Content) throws {
        let name = content.entry.name
        switch content.entry.kind {
        case .retained:
            if content.present {
                try center.postRelayed(name: name, object: content.object, userInfo: content.archive.map { [UInt8]($0) }, retain: true)
            } else {
                center.clearRetainedNotification(named: Notification.Name(name))
            }
        case .value:
            for _ in 0..<8 {
                let newest = try center.relayedValue(named: name).newest
                if try center.publishRelayedValue(named: name, archive: content.present ? content.archive.map { [UInt8]($0) } : nil, after: newest) != nil {
                    return
                }
            }
            throw RelayLinkError(.failed, "other processes kept writing it")
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
        let known = state.withLock { $0.entries }
        var entries: [SyncedEntry.Content] = []
        for entry in routes.sentEntries {
            guard let noted = known[entry.key], noted.mark != nil, var content = read(entry)?.content else { continue }
            content.stamp = noted.stamp
            entries.append(content)
        }
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
