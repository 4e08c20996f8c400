import Foundation
import Synchronization
import Wormhole
import WormholeRelay

/// Retained notifications and group values kept the same on every host (the relay's ``EntryLedger``: each write
/// stamped, the last one winning): each entry this group changes is published as its latest to its subject of
/// the entries' stream, which keeps the last per subject; what the other hosts published is applied where it is
/// later. A host's consumer of that stream starts from the last of each subject, so a host that comes late gets
/// what holds now.
final class BridgeEntries: Sendable {
    let ledger: EntryLedger
    /// Entries that changed here and wait to be published; all of them after each connection, so that the server
    /// holds this host's latest whatever it missed.
    private let pending = Mutex<(entries: Set<SyncedEntry>, all: Bool)>(([], true))
    private let routes: RelayRoutes

    init(ledger: EntryLedger, routes: RelayRoutes) {
        self.ledger = ledger
        self.routes = routes
    }

    /// Whether no retained name or group value is routed, either way.
    var isEmpty: Bool { routes.synced.isEmpty }

    /// The stream sequence of the last message of the entries' stream applied (``BridgeInbound`` keeps the
    /// notifications' one).
    private let streamApplied = Mutex<UInt64?>(nil)

    /// The stream sequences between the last message applied and `sequence`: those the consumer passed over.
    func skipped(before sequence: UInt64) -> ClosedRange<UInt64>? {
        streamApplied.withLock { last in
            guard let last, sequence > last + 1 else { return nil }
            return (last + 1)...(sequence - 1)
        }
    }

    func applied(streamSequence sequence: UInt64) {
        streamApplied.withLock { $0 = max($0 ?? 0, sequence) }
    }

    /// Applies what a message of the entries' stream holds (another host's write, or this host's own, which
    /// changes nothing), where it is later than what this host holds.
    func apply(_ message: NATSMessage, save: () throws -> Void) -> EntryLedger.Outcome {
        let content: SyncedEntry.Content
        do {
            content = try StrictPropertyList.decode(SyncedEntry.Content.self, from: message.payload)
        } catch {
            BridgeLog.write("a message on \(message.subject) is not an entry the bridge wrote (\(error)); dropped")
            return .dropped
        }
        return ledger.apply(content, save: save)
    }

    /// Something of this group's entries may have changed: look at them before the next publish.
    func changed() {
        pending.withLock { $0.all = true }
    }

    /// After a connection is made: every entry is published again.
    func connected() {
        pending.withLock { $0.all = true }
    }

    /// The entries to publish now, with their stamped content: those stamped anew by a look at the group, and
    /// all of them after a connection.
    func due() -> [SyncedEntry.Content] {
        let (waiting, all) = pending.withLock { state in
            defer { state = ([], false) }
            return state
        }
        var entries = waiting.union(ledger.scan())
        if all { entries.formUnion(routes.sentEntries) }
        // An entry never written here (stamped zero) has nothing to say.
        return entries.compactMap(ledger.content(of:)).filter { $0.stamp != .zero }
    }

    /// Puts back entries not published (the connection failed).
    func retry(_ contents: [SyncedEntry.Content]) {
        pending.withLock { $0.entries.formUnion(contents.map(\.entry)) }
    }
}
