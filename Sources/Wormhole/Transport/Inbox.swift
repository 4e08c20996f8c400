#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The receiving end of a listener's transport: the sockets its receive thread polls and reads. Owned by the
/// receive thread once it runs; its sockets close when it is released.
protocol Inbox: AnyObject {
    /// Appends the descriptors to poll for incoming messages.
    func addPollDescriptors(to events: inout [pollfd])
    /// How long the receive thread may wait for them, in milliseconds, when shorter than its idle interval.
    var pollTimeout: Int32? { get }
    /// Reads a batch from each descriptor that `events` (the ones it added, in order, with their results)
    /// says is ready.
    func receiveReady(_ events: ArraySlice<pollfd>, into frames: inout [Frame])
    /// Reads everything waiting now. Returns false when some of it cannot be read yet.
    func receiveAll(into frames: inout [Frame]) -> Bool
    /// Takes `fresh`, bound anew under the socket's name, as the socket posters reach; what was sent to the old
    /// one is still read.
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame])
}

extension GroupNotificationCenter.Transport {
    /// The inbox of a socket of this transport, bound by ``UnixSocket/bind(_:directory:directoryPath:name:backlog:)``.
    func makeInbox(_ socket: consuming OwnedDescriptor, reader: MessageReader) -> any Inbox {
        switch self {
        case .sequencedPacket: SeqpacketInbox(socket, reader: reader)
        case .datagram: DatagramInbox(socket, reader: reader)
        }
    }
}

/// Reads messages from a socket into frames, counting what it must drop.
final class MessageReader {
    /// Fits the largest frame the socket path takes, and one byte more to tell a cut message.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: Limits.maximumDirectFrameSize + 1, alignment: 8)
    private let dropped: (_ count: Int, _ reason: String) -> Void
    /// Whether a read of 0 bytes means the peer closed its connection (sequenced packets); on a datagram socket
    /// it is an empty datagram, dropped like any other malformed message.
    private let emptyMeansClosed: Bool

    init(transport: GroupNotificationCenter.Transport, dropped: @escaping (_ count: Int, _ reason: String) -> Void) {
        emptyMeansClosed = transport == .sequencedPacket
        self.dropped = dropped
    }

    deinit {
        buffer.deallocate()
    }

    func warn(_ reason: String) { dropped(0, reason) }

    /// Reads up to `limit` messages from `fd`. Returns false when the peer closed the connection or it failed.
    func read(_ fd: CInt, into frames: inout [Frame], limit: Int) -> Bool {
        for _ in 0..<limit {
            let received: Int?
            do throws(WormholeError) {
                received = try UnixSocket.receive(fd, into: buffer)
            } catch {
                dropped(0, "connection failed: \(error)")
                return false
            }
            guard let length = received else { return true }
            guard length > 0 || !emptyMeansClosed else { return false }
            guard length <= buffer.count - 1 else {
                dropped(1, "message of \(length) bytes is over the \(Limits.maximumDirectFrameSize)-byte limit")
                continue
            }
            do throws(WormholeError) {
                let frame = try Frame(decoding: Array(buffer[0..<length]))
                if frame.kind == .notification { frames.append(frame) }
            } catch {
                dropped(1, "message rejected: \(error)")
            }
        }
        return true
    }
}
