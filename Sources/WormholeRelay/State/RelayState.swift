import Foundation
import Wormhole

/// What a relay remembers across its runs, in `relay/<client identifier>/state` in the container: this device's
/// id, its outbox's numbering, and what it already sent and posted, so that a notification handed over twice (a
/// durable hand-over after a kill, a transfer sent again) is posted once.
package struct RelayState: Codable, Sendable {
    static let maximumPosters = Limits.relayRememberedPosters
    static let maximumFileSize = Limits.relayStateFileSize

    /// This device's id, drawn once.
    var device: UInt64
    /// The link sequence of the next notification put in the outbox.
    var nextLink: UInt64 = 1
    /// For each poster of this group, the highest sequence put in the outbox.
    var sent = PosterMarks()
    /// The other device's id, as its envelopes say, and what of its notifications was posted here.
    var peer: UInt64 = 0
    /// The other device's earlier relay ids, newest last (at most 8): what still comes from one is left over
    /// from before that relay started anew, and sent again under its new id.
    var formerPeers: [UInt64]? = nil
    var applied: UInt64 = 0
    var posted = PosterMarks()
    /// The last write of each retained name and group value, stamped, and which local content it is.
    var entries: [String: EntryState] = [:]

    package struct EntryState: Codable, Sendable, Hashable {
        package var stamp: Stamp
        /// Which content of this container the stamp is for (``LocalMark``); nil while a relay writes it.
        package var mark: String?

        package init(stamp: Stamp, mark: String?) {
            self.stamp = stamp
            self.mark = mark
        }
    }

    init(device: UInt64) {
        self.device = device
    }

    /// Reads the state, or starts a new one when there is none or it is damaged (then logged); `isNew` says
    /// which.
    static func load(from file: StateFile, log: (String) -> Void) -> (state: RelayState, isNew: Bool) {
        do {
            if let data = try file.read() {
                let state = try StrictPropertyList.decode(RelayState.self, from: data)
                if state.device != 0, state.nextLink > 0, state.nextLink < Limits.relayHighestLink, state.applied < Limits.relayHighestLink {
                    return (state, false)
                }
                log("relay state in \(file.path) has no device id or numbers out of range; starting anew")
            }
        } catch {
            log("relay state in \(file.path) is damaged (\(error)); starting anew: notifications may be posted twice")
        }
        return (RelayState(device: UInt64.random(in: 1...UInt64.max)), true)
    }

    func save(to file: StateFile) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        try file.write(try encoder.encode(self))
    }
}

/// The highest sequence seen of each poster, and when it was last seen, so that the oldest is forgotten first.
package struct PosterMarks: Codable, Sendable {
    private var marks: [UInt64: Mark] = [:]
    private var clock: UInt64 = 0

    package init() {}

    private struct Mark: Codable, Sendable {
        var sequence: UInt64
        var seen: UInt64
    }

    /// Whether `sequence` of `poster` is past what was seen.
    package func isPast(poster: UInt64, sequence: UInt64) -> Bool {
        marks[poster].map { $0.sequence < sequence } ?? true
    }

    /// Whether `sequence` of `poster` is past what was seen; if so, remembers it.
    package mutating func advance(poster: UInt64, sequence: UInt64) -> Bool {
        if let mark = marks[poster], mark.sequence >= sequence { return false }
        clock &+= 1
        marks[poster] = Mark(sequence: sequence, seen: clock)
        if marks.count > RelayState.maximumPosters, let oldest = marks.min(by: { $0.value.seen < $1.value.seen })?.key {
            marks[oldest] = nil
        }
        return true
    }
}
