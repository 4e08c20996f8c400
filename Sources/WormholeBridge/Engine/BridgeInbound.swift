import Foundation
import Synchronization
import Wormhole
import WormholeEngine
import WormholeRelay

/// What comes from the other hosts: each message the server hands this host's consumer, posted into this group
/// once, as the notification it was. What was posted is remembered per host (its outbox numbers), so that a
/// message handed over again is dropped, and logged in the posted log as it is posted, so that a bridge killed
/// before it saved its state does not post it again.
final class BridgeInbound: Sendable {
    private struct State {
        var posted: PosterMarks
        var postedLog: PostedLog
        var streamApplied: UInt64?
        var streamCreated: String?
        var unsaved = false
    }

    /// What a message was, once applied.
    enum Outcome {
        case posted, ownMessage, duplicate, dropped
    }

    private let state: Mutex<State>
    private let center: GroupNotificationCenter
    private let routes: RelayRoutes
    private let subjects: BridgeSubjects
    private let device: UInt64

    init(
        posted: PosterMarks, postedLog: sending PostedLog, streamApplied: UInt64?, streamCreated: String?,
        center: GroupNotificationCenter, routes: RelayRoutes, subjects: BridgeSubjects, device: UInt64
    ) {
        state = Mutex(
            State(posted: posted, postedLog: postedLog, streamApplied: streamApplied, streamCreated: streamCreated))
        self.center = center
        self.routes = routes
        self.subjects = subjects
        self.device = device
    }

    /// What the state file keeps of the inbound side.
    func record(into bridgeState: inout BridgeState) {
        state.withLock { state in
            bridgeState.posted = state.posted
            bridgeState.streamApplied = state.streamApplied
            bridgeState.streamCreated = state.streamCreated
        }
    }

    /// The stream sequences between the last message applied and `sequence`, the one handed over now: those the
    /// consumer skipped, to be read from the stream first. Empty for the first message, and for one at or
    /// before the last (handed over again).
    func skipped(before sequence: UInt64) -> ClosedRange<UInt64>? {
        state.withLock { state in
            // Compared without adding: a sequence the server (or a forger) says may be the highest there is.
            guard let last = state.streamApplied, sequence > last, sequence - last > 1 else { return nil }
            return (last + 1)...(sequence - 1)
        }
    }

    /// Where this host's consumer starts if it has to be made on the stream at `position`: with what comes next
    /// on a host's first run; after the last message the host took when that is this stream's (an operator
    /// deleted the consumer); with the stream's first when the stream is another (deleted and made again: all it
    /// holds came after what the host took), or when the host says it took past the stream's end. What is
    /// handed over twice so is dropped as a copy.
    func consumerStart(on position: StreamPosition) -> ConsumerStart {
        state.withLock { state in
            guard let last = state.streamApplied else { return .new }
            // A state of an earlier version, which did not keep when the stream was made, tells by the numbering
            // alone.
            let same = state.streamCreated.map { $0 == position.created } ?? true
            return same && last <= position.lastSequence ? .after(last) : .all
        }
    }

    /// Notes the stream the bridge connected to, and where a consumer it made starts: one that starts with the
    /// first message of another stream hands over in a numbering that says nothing of what the host took before,
    /// so no gap is looked for before its first message.
    func connected(to position: StreamPosition, madeConsumer start: ConsumerStart?) {
        state.withLock { state in
            if case .all? = start {
                state.streamApplied = nil
                state.unsaved = true
            }
            if let created = position.created, created != state.streamCreated {
                state.streamCreated = created
                state.unsaved = true
            }
        }
    }

    /// Notes that the stream's message `sequence` was applied.
    func applied(streamSequence sequence: UInt64) {
        state.withLock { state in
            state.streamApplied = max(state.streamApplied ?? 0, sequence)
            state.unsaved = true
        }
    }

    /// Whether something was posted since the state was last saved.
    var unsaved: Bool { state.withLock { $0.unsaved } }

    /// Empties the posted log once the state holding what it said is saved.
    func saved() {
        state.withLock { state in
            state.postedLog.clear()
            state.unsaved = false
        }
    }

    /// Posts what `message` holds, unless this host sent it, it was posted before, or it is not a notification
    /// this bridge takes (dropped and logged).
    /// - Throws: When the container cannot be written: the message is not acknowledged and comes again.
    func apply(_ message: NATSMessage) throws -> Outcome {
        guard let origin = message.headers?[BridgeHeaders.host].flatMap({ UInt64($0, radix: 16) }), origin != 0 else {
            BridgeLog.write("a message on \(message.subject) says no host it came from; dropped")
            return .dropped
        }
        if origin == device { return .ownMessage }
        let item: RelayItem
        do {
            item = try StrictPropertyList.decode(RelayItem.self, from: message.payload)
        } catch {
            BridgeLog.write("a message on \(message.subject) is not a notification the bridge wrote (\(error)); dropped")
            return .dropped
        }
        guard item.link > 0, item.link < Limits.relayHighestLink else {
            BridgeLog.write("a message on \(message.subject) has an outbox number out of range; dropped")
            return .dropped
        }
        // A bridge publishes each notification to its name's subject. One that names another came from a client
        // that may publish here but not there (the server's permissions are per subject), or from somewhere else
        // than this stream's notifications.
        guard subjects.subject(for: item.name) == message.subject else {
            BridgeLog.write("a message on \(message.subject) holds a notification of another name; dropped")
            return .dropped
        }
        guard state.withLock({ $0.posted.isPast(poster: origin, sequence: item.link) }) else {
            return .duplicate
        }
        guard routes.incoming(item.name) == .notification else {
            BridgeLog.write("\(item.name) from another host is not routed to this one; dropped")
            return .dropped
        }
        do {
            // As the same poster and sequence each time it is posted: a copy posted again after a kill right
            // after the post is dropped by the listeners.
            try center.postRelayed(
                name: item.name, object: item.object, userInfo: item.userInfo.map { [UInt8]($0) }, retain: false,
                stablePoster: device &* 0x9E37_79B9_7F4A_7C15 ^ origin, sequence: item.link)
        } catch let error as WormholeError where error.code == .system {
            throw error
        } catch {
            BridgeLog.write("\(item.name) from another host not posted: \(error); dropped")
            return .dropped
        }
        StopPoint.reached("bridge.posted")
        state.withLock { state in
            _ = state.posted.advance(poster: origin, sequence: item.link)
            state.unsaved = true
            do {
                try state.postedLog.append(link: item.link, poster: origin, sequence: item.link)
            } catch {
                BridgeLog.write("bridge log not written (\(error)): a kill before the state is saved posts it again")
            }
        }
        StopPoint.reached("bridge.logged")
        return .posted
    }
}

/// The headers the bridge puts on each message.
enum BridgeHeaders {
    /// The host that published it (its id in hex).
    static let host = "Wormhole-Host"
    /// JetStream's de-duplication: the same id within the stream's window is stored once.
    static let messageID = "Nats-Msg-Id"
    /// JetStream's compare-and-set: stored only if the subject's last message is the one of this sequence (0:
    /// none).
    static let expectedLastSubjectSequence = "Nats-Expected-Last-Subject-Sequence"
}
