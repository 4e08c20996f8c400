#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads messages from a socket into frames, a batch per system call where the platform can
/// (``MessageBatch``), counting what it must drop. Shared frames (``SharedFrame``) are read from the
/// descriptor they carry; any other descriptor a message carries is closed and the message dropped.
final class MessageReader {
    /// How many messages one receive takes at most.
    static let batchSize = 16
    /// Every slot fits the largest frame the socket path takes, and one byte more to tell a cut message.
    private let batch = MessageBatch(capacity: batchSize, messageCapacity: Limits.maximumDirectFrameSize + 1)
    private let dropped: (_ count: Int, _ reason: String) -> Void
    /// Whether a read of 0 bytes means the peer closed its connection (sequenced packets); on a datagram socket
    /// it is an empty datagram, dropped like any other malformed message.
    private let emptyMeansClosed: Bool

    init(transport: GroupNotificationCenter.Transport, dropped: @escaping (_ count: Int, _ reason: String) -> Void) {
        emptyMeansClosed = transport == .sequencedPacket
        self.dropped = dropped
    }

    func warn(_ reason: String) { dropped(0, reason) }

    /// Reads up to `limit` messages (or a batch more) from `fd`. Returns false when the peer closed the
    /// connection or it failed.
    func read(_ fd: CInt, into frames: inout [Frame], limit: Int) -> Bool {
        var read = 0
        while read < limit {
            let received: Int?
            do throws(WormholeError) {
                received = try batch.receive(fd)
            } catch {
                dropped(0, "connection failed: \(error)")
                return false
            }
            guard let received else { return true }
            var open = true
            for index in 0..<received {
                let message = batch.message(index)
                // Closed before anything else can fail: a message's descriptors are never kept.
                defer { message.descriptors.forEach(Sys.close) }
                guard open else { continue }
                if message.length == 0 && emptyMeansClosed {
                    open = false
                    continue
                }
                take(message, into: &frames)
            }
            guard open else { return false }
            read += received
            // A short batch: the socket is empty now.
            if received < batch.capacity { return true }
        }
        return true
    }

    private func take(_ message: MessageBatch.Message, into frames: inout [Frame]) {
        guard message.length < batch.messageCapacity else {
            dropped(1, "message of \(message.length) bytes is over the \(Limits.maximumDirectFrameSize)-byte limit")
            return
        }
        if message.controlTruncated {
            dropped(1, "message rejected: it carried more descriptors than a frame can")
            return
        }
        do throws(WormholeError) {
            if SharedFrame.isMessage(message.bytes) {
                guard message.descriptors.count == 1, let file = message.descriptors.first else {
                    throw WormholeError(
                        .corruptData, "shared frame came with \(message.descriptors.count) descriptors, not one")
                }
                frames.append(try SharedFrame.read(message.bytes, file: file))
                return
            }
            guard message.descriptors.isEmpty else {
                throw WormholeError(.corruptData, "message carried \(message.descriptors.count) descriptors")
            }
            let frame = try Frame(decoding: Array(message.bytes))
            if frame.kind == .notification { frames.append(frame) }
        } catch {
            dropped(1, "message rejected: \(error)")
        }
    }
}
