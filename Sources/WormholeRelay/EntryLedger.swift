import Foundation
import Synchronization
import Wormhole

/// Retained notifications and group values kept the same on this side and another (the other device, the other
/// hosts), whatever carries them: each write this group makes is stamped (the time this side saw it, its id
/// breaking ties), and what the other side holds is applied where its stamp is later, the last write winning.
///
/// It owns the stamps of the entries (kept in the state file) and knows nothing of how they travel: a relay
/// hands ``contents()`` over its link's context, a bridge publishes each entry that changed.
package final class EntryLedger: Sendable {
    private let center: GroupNotificationCenter
    private let routes: RelayRoutes
    /// This side's id: what breaks a tie between two writes stamped alike.
    private let device: UInt64
    /// Who the other side is, for messages: "the other device", "another host".
    private let other: String
    private let log: @Sendable (String) -> Void
    /// The last write of each retained name and group value, stamped, and which local content it is.
    private let entries: Mutex<[String: RelayState.EntryState]>

    package init(
        entries: [String: RelayState.EntryState], center: GroupNotificationCenter, routes: RelayRoutes, device: UInt64,
        other: String, log: @escaping @Sendable (String) -> Void
    ) {
        self.entries = Mutex(entries)
        self.center = center
        self.routes = routes
        self.device = device
        self.other = other
        self.log = log
    }

    /// The stamps, for the state file.
    package var recorded: [String: RelayState.EntryState] { entries.withLock { $0 } }

    // MARK: This side's writes

    /// Stamps what changed here since this side last looked; returns the entries stamped anew (empty when none
    /// changed).
    @discardableResult
    package func scan() -> [SyncedEntry] {
        var changed: [SyncedEntry] = []
        for entry in routes.sentEntries {
            guard let local = read(entry) else { continue }
            let known = entries.withLock { $0[entry.key] }
            if known?.mark == local.mark { continue }
            let noted: RelayState.EntryState
            if local.relayed, let known, known.mark == nil {
                // Written by this side, which was stopped before it noted it.
                noted = .init(stamp: known.stamp, mark: local.mark)
            } else if local.relayed {
                noted = .init(stamp: known?.stamp ?? .zero, mark: local.mark)
            } else if known == nil, !local.content.present, neverWritten(entry) {
                // Nothing written here that this side saw: no write, and never one that wins over the other
                // side's (a scan made late would otherwise undo a value set there meanwhile).
                noted = .init(stamp: .zero, mark: local.mark)
            } else {
                let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
                let after = known?.stamp.time ?? 0
                let stamp = Stamp(time: max(now, after == .max ? after : after + 1), device: device)
                noted = .init(stamp: stamp, mark: local.mark)
            }
            entries.withLock { $0[entry.key] = noted }
            changed.append(entry)
        }
        return changed
    }

    /// This side's entries as they cross: each routed entry whose content this side noted, with its stamp.
    package func contents() -> [SyncedEntry.Content] {
        routes.sentEntries.compactMap(content(of:))
    }

    /// One routed entry as it crosses, when this side noted its content.
    package func content(of entry: SyncedEntry) -> SyncedEntry.Content? {
        guard let noted = entries.withLock({ $0[entry.key] }), noted.mark != nil, var content = read(entry)?.content else {
            return nil
        }
        content.stamp = noted.stamp
        return content
    }

    /// Whether `entry` was never written in this container, as far as can be told: a value with no version at
    /// all; a retained name with none now (a clear leaves nothing to tell it by).
    private func neverWritten(_ entry: SyncedEntry) -> Bool {
        switch entry.kind {
        case .retained: return true
        case .value: return (try? center.relayedValue(named: entry.name).newest) == 0
        }
    }

    /// The local content of `entry`: which it is, whether a relay or bridge wrote it, and what crosses.
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
                log("value \(entry.name) not read: \(error)")
                return nil
            }
        }
    }

    // MARK: The other side's writes

    /// What applying one entry did.
    package enum Outcome: Sendable {
        /// Written here: it was later than what this side held.
        case applied
        /// Not later, or not routed here: nothing to do.
        case unchanged
        /// Refused or not written (logged).
        case dropped
    }

    /// Applies `incoming` where it is later than what this side holds; the state is saved (`save`) around the
    /// write, so that a side stopped in between knows the write is its own.
    package func apply(_ incoming: SyncedEntry.Content, save: () throws -> Void) -> Outcome {
        guard routes.receives(incoming.entry) else { return .unchanged }
        let known = entries.withLock { $0[incoming.entry.key] }
        guard incoming.stamp > (known?.stamp ?? .zero) else { return .unchanged }
        let lead = UInt64(Limits.relayStampLead / .milliseconds(1))
        guard incoming.stamp.time <= UInt64(max(0, Date().timeIntervalSince1970 * 1000)) + lead else {
            log("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from \(other) is stamped more than a day ahead of this clock; not applied")
            return .dropped
        }
        // Noted before it is written: a side stopped in between knows the write is its own.
        entries.withLock { $0[incoming.entry.key] = .init(stamp: incoming.stamp, mark: nil) }
        try? save()
        do {
            try write(incoming)
        } catch {
            log("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from \(other) not applied: \(error)")
            // Not written: what this side held stays noted as it was, so that it is not taken for a newer write.
            entries.withLock { $0[incoming.entry.key] = known }
            try? save()
            return .dropped
        }
        // What this side wrote, unless a write of this group came in between: that one stays unnoted, and the
        // next scan stamps it as this group's.
        if let local = read(incoming.entry), local.relayed || (!incoming.present && !local.content.present) {
            entries.withLock { $0[incoming.entry.key] = .init(stamp: incoming.stamp, mark: local.mark) }
        }
        try? save()
        return .applied
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
}
