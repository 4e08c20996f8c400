import Synchronization
import Wormhole

/// The relays of this process, one per container and client identifier: two would share one durable center
/// (one endpoint per identity per process) and both write one state and one outbox. Another process is kept out
/// by the center's claim of the identity; this table keeps out a second relay of this process.
///
/// A relay's engine is made while the table is held, so that a closed engine's late notification (its observer's
/// block may end after the relay closed) is kept by whichever engine owns the folder then, never by two at once.
enum RelayClaims {
    /// A container, by its device and inode (whichever path reached it), and a client identifier.
    struct Key: Hashable, Sendable {
        let container: ContainerFolder.FolderIdentity
        let clientIdentifier: String
    }

    /// The engines of a key: the running one, and how many have been made.
    /// Safe because it is read and written only under `table`'s lock.
    private final class Entry: @unchecked Sendable {
        weak var engine: RelayEngine?
        var owned = false
        var generation: UInt64 = 0
    }

    private static let table = Mutex<[Key: Entry]>([:])

    /// Makes the engine of `key` with `make` (given its generation), unless a relay of this process has it.
    /// - Throws: ``Wormhole/WormholeError/Code/identityInUse`` while another relay of this process runs `key`
    ///   (until it is closed); what `make` throws.
    static func claim(_ key: Key, making make: (UInt64) throws -> RelayEngine) throws -> RelayEngine {
        try table.withLock { table in
            let entry = table[key] ?? Entry()
            if entry.owned, entry.engine != nil {
                throw WormholeError(
                    .identityInUse,
                    "a relay of this process already runs as client identifier \"\(key.clientIdentifier)\" on this container; close it first")
            }
            let engine = try make(entry.generation + 1)
            entry.generation += 1
            entry.engine = engine
            entry.owned = true
            table[key] = entry
            return engine
        }
    }

    /// Gives `key` up, when `engine` holds it: the next relay of this process may start on it.
    static func release(_ key: Key, by engine: RelayEngine) {
        table.withLock { table in
            guard let entry = table[key], entry.engine === engine else { return }
            entry.owned = false
        }
    }

    /// What became of a notification that reached a closed engine.
    enum LateRoute {
        /// Kept in the closed engine's outbox: no relay ran on its key since.
        case kept
        /// For the relay that runs on the key now.
        case forward(to: RelayEngine)
        /// Neither: a later relay ran on the key and closed, and the closed engine's numbering is out of date.
        case lost
    }

    /// Where a notification that reached a closed engine of `generation` goes: when no relay ran on `key` since,
    /// `keep` runs, with the table held so that no new engine reads the outbox meanwhile; else to the relay that
    /// runs on it now.
    static func route(lateFor key: Key, generation: UInt64, keep: () -> Void) -> LateRoute {
        table.withLock { table in
            guard let entry = table[key] else { return .lost }
            if entry.generation == generation {
                keep()
                return .kept
            }
            if entry.owned, let owner = entry.engine { return .forward(to: owner) }
            return .lost
        }
    }
}
