
/// Reads messages from a socket into frames, a batch per system call where the platform can
/// (``MessageBatch``), counting what it must drop. Shared frames (``SharedFrame``) are read from the
/// descriptor they carry; any other descriptor a message carries is closed and the message dropped.
///
/// Used by its listener's receive thread alone; the round's counters go without run-time exclusivity checks.
final class MessageReader {
    /// The error of the last read that failed.
    private(set) var lastFailure: WormholeError?
    @exclusivity(unchecked) private var roundBytes = 0
    @exclusivity(unchecked) private var roundMessages = 0
    @exclusivity(unchecked) private var roundSawNudge = false
    /// The empty datagrams this round read: wake-ups of a read that waits (``ReceiveThread/wake()``).
    @exclusivity(unchecked) private(set) var roundWakes = 0
    private var recentSharedFiles = SharedFrame.RecentFiles(capacity: Limits.recentSharedFiles)
    /// The names of recent frames, each decoded once.
    @exclusivity(unchecked) private var names = DecodedNames()
    /// Every slot fits the largest frame the socket path takes, and one byte more to tell a cut message.
    private let batch = MessageBatch(capacity: Limits.readBatchSize, messageCapacity: Limits.maximumDirectFrameSize + 1)
    private let dropped: (_ count: Int, _ reason: String) -> Void
    private let warning: (String) -> Void
    /// Whether a read of 0 bytes means the peer closed its connection (sequenced packets); on a datagram socket
    /// it is an empty datagram: what ends a read that waits (``ReceiveThread/wake()``), taken as nothing else.
    private let emptyMeansClosed: Bool

    init(
        transport: SocketKind, dropped: @escaping (_ count: Int, _ reason: String) -> Void, warning: @escaping (String) -> Void
    ) {
        emptyMeansClosed = transport == .sequencedPacket
        self.dropped = dropped
        self.warning = warning
    }

    func warn(_ reason: String) { warning(reason) }

    /// Starts a round of reads with a fresh ``Limits/readRoundBudget``.
    func beginRound() {
        roundBytes = 0
        roundMessages = 0
        roundSawNudge = false
        roundWakes = 0
    }

    /// Whether this round's reads suggest a poster may have spooled: a nudge came (a poster began a segment), or
    /// so much was waiting (8 messages, or as many bytes as the largest frame the socket takes) that a poster
    /// may have found the socket full, and with it no room for its nudge.
    var suggestsSpooling: Bool { roundSawNudge || roundMessages >= 8 || roundBytes >= Limits.maximumDirectFrameSize }

    /// Whether this round read any message, taken or dropped, wake-ups aside: room was made in a socket.
    var readAny: Bool { roundMessages > 0 }

    /// Whether this round's reads stopped at ``Limits/readRoundBudget`` rather than at the end of what was waiting.
    var isOverBudget: Bool { roundBytes >= Limits.readRoundBudget }

    /// Reads everything waiting on `fd`, up to `limit` messages (or a batch more), and no more once the round's
    /// budget is spent. Returns false when the peer closed the connection or it failed.
    func read(_ fd: Descriptor, into frames: inout [Frame], limit: Int) -> Bool {
        var pace = ReadPace()
        return read(fd, into: &frames, limit: limit, pace: &pace)
    }

    /// Reads from `fd`, which a wait said is ready, as `pace` asks: one message, or everything waiting up to
    /// `limit` messages (or a batch more); and records what it found there for the next read. Returns false
    /// when the peer closed the connection or it failed. With `waiting`, the first read waits for a message as
    /// long as the socket allows (``SocketOptions/waitReceiving(_:milliseconds:)``): then `fd` was not polled.
    func read(_ fd: Descriptor, into frames: inout [Frame], limit: Int, pace: inout ReadPace, waiting: Bool = false) -> Bool {
        let one = pace.asksForOne
        let asked = one ? 1 : batch.capacity
        var read = 0
        var waits = waiting
        defer { pace.record(read, askedForOne: one) }
        while read < limit && !isOverBudget {
            let received: Int?
            do throws(WormholeError) {
                received = try batch.receive(fd, upTo: asked, waiting: waits)
                waits = false
            } catch {
                lastFailure = error
                warning("receive failed: \(error)")
                return false
            }
            guard let received else { return true }
            var open = true
            let wakesBefore = roundWakes
            for index in 0..<received {
                let message = batch.message(index)
                // Closed before anything else can fail: a message's descriptors are never kept.
                defer { message.descriptors.forEach(DescriptorPassing.closeReceived) }
                guard open else { continue }
                if message.length == 0 && emptyMeansClosed {
                    open = false
                    continue
                }
                // An empty datagram wakes a read that waits; one that carried descriptors is malformed.
                if message.length == 0 && message.descriptors.isEmpty && !message.controlTruncated {
                    roundWakes += 1
                    continue
                }
                take(message, into: &frames)
            }
            guard open else { return false }
            read += received
            // Wake-ups are no sign of what posters sent.
            roundMessages += received - (roundWakes - wakesBefore)
            // A short batch: the socket is empty now. After one message asked for, what else waits wakes the
            // next wait.
            if received < asked || one { return true }
        }
        return true
    }

    private func take(_ message: MessageBatch.Message, into frames: inout [Frame]) {
        guard message.length < batch.messageCapacity else {
            dropped(1, "message of \(message.length) bytes is over the \(Limits.maximumDirectFrameSize)-byte limit")
            return
        }
        let kind = Frame.Header(message.bytes)?.kind
        let passesFile = kind == SharedFrame.kind || kind == FrameFile.kind
        if message.controlTruncated {
            // Out of descriptors, or a peer sent more than one: what was not received cannot be read.
            let what = passesFile ? "a shared frame" : "a message"
            dropped(1, "\(what) lost its descriptor: this process is out of descriptors, or it carried more than one")
            return
        }
        do throws(WormholeError) {
            if passesFile {
                guard message.descriptors.count == 1, let file = message.descriptors.first else {
                    throw WormholeError(
                        .corruptData, "shared frame came with \(message.descriptors.count) descriptors, not one")
                }
                let frame = kind == FrameFile.kind
                    ? try FrameFile.read(message.bytes, file: file)
                    : try SharedFrame.read(message.bytes, file: file, recent: &recentSharedFiles)
                roundBytes += frame.userInfo?.count ?? 0
                frames.append(frame)
                return
            }
            guard message.descriptors.isEmpty else {
                throw WormholeError(.corruptData, "message carried \(message.descriptors.count) descriptors")
            }
            roundBytes += message.length
            // Decoded from the receive slot, which the next read reuses: only a userInfo is copied out.
            let frame = try Frame(decoding: message.bytes, names: &names)
            if frame.kind == .notification { frames.append(frame) } else { roundSawNudge = true }
        } catch {
            dropped(1, "message rejected: \(error)")
        }
    }
}
