import Foundation
import WormholeEngine
import WormholeRelay

/// What a bridge remembers across its runs, in `bridge/<client identifier>/state` in the container: this
/// host's id, its outbox's numbering, and what it already took and posted, so that a notification handed over
/// twice (a durable hand-over after a kill, a message the server hands over again) is carried and posted once.
struct BridgeState: Codable, Sendable {
    /// This host's id, drawn once: its durable consumer's name, and what its messages say they came from.
    var device: UInt64
    /// The outbox number of the next notification taken.
    var nextLink: UInt64 = 1
    /// For each poster of this group, the highest sequence put in the outbox.
    var sent = PosterMarks()
    /// For each other host, the highest outbox number of its notifications posted here.
    var posted = PosterMarks()
    /// The stream sequence of the last message this host's consumer handed over and the bridge applied: a
    /// consumer that skips one (a cluster's replica that lagged as it took over) is caught by the gap.
    var streamApplied: UInt64?
    /// The last write of each retained name and group value, stamped (``EntryLedger``).
    var entries: [String: RelayState.EntryState]?
    /// When the stream `streamApplied` numbers was made, as the server said: a stream deleted and made again
    /// numbers from 1 anew.
    var streamCreated: String?

    init(device: UInt64) {
        self.device = device
    }

    /// Reads the state, or starts a new one when there is none or it is damaged (then logged).
    static func load(from file: StateFile) -> (state: BridgeState, isNew: Bool) {
        do {
            if let data = try file.read() {
                let state = try StrictPropertyList.decode(BridgeState.self, from: data)
                if state.device != 0, state.nextLink > 0, state.nextLink < Limits.relayHighestLink { return (state, false) }
                BridgeLog.write("bridge state in \(file.path) has no host id or numbers out of range; starting anew")
            }
        } catch {
            BridgeLog.write("bridge state in \(file.path) is damaged (\(error)); starting anew as a new host")
        }
        return (BridgeState(device: UInt64.random(in: 1...UInt64.max)), true)
    }

    func save(to file: StateFile) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        try file.write(try encoder.encode(self))
    }
}
