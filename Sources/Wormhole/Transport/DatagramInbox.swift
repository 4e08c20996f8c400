#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The inbox of the datagram transport: one socket that every poster sends to. A poster's datagrams queue in
/// the order sent; a full queue fails its send at once (EAGAIN on Linux, ENOBUFS on Darwin) and it spools.
final class DatagramInbox: Inbox {
    /// The most sockets kept from before a rebind, still read because posters connected to them send there.
    static let maximumRetired = 4

    /// Descriptors this inbox owns, closed in `deinit`: the socket bound under the name now, and those it was
    /// bound to before, oldest first.
    private var socket: CInt
    private var retired: [CInt] = []
    private let reader: MessageReader
    /// How many messages the next read of `socket` asks for; the retired ones are read in batches.
    private var pace = ReadPace()

    init(_ socket: consuming OwnedDescriptor, reader: MessageReader) {
        self.socket = socket.release()
        self.reader = reader
    }

    deinit {
        Sys.close(socket)
        retired.forEach(Sys.close)
    }

    var pollTimeout: Int32? { nil }

    var suggestsSpooling: Bool { reader.suggestsSpooling }

    var readAny: Bool { reader.readAny }

    func addPollDescriptors(to events: inout [pollfd]) {
        events.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
        for index in retired.indices {
            events.append(pollfd(fd: retired[index], events: Int16(POLLIN), revents: 0))
        }
    }

    func receiveReady(_ events: ArraySlice<pollfd>, into frames: inout [Frame]) {
        // A batch per socket, as posters may keep it full: what remains wakes the next poll.
        reader.beginRound()
        let paced = ReadPace.applies(to: events)
        for event in events where event.revents != 0 {
            if paced && event.fd == socket {
                _ = reader.read(event.fd, into: &frames, limit: 512, pace: &pace)
            } else {
                _ = reader.read(event.fd, into: &frames, limit: 512)
            }
        }
    }

    func receiveAll(into frames: inout [Frame]) -> Bool {
        reader.beginRound()
        _ = reader.read(socket, into: &frames, limit: 100_000)
        for index in retired.indices { _ = reader.read(retired[index], into: &frames, limit: 100_000) }
        return !reader.isOverBudget
    }

    /// Keeps the old socket, read like the new one: posters connected to it keep sending there until their
    /// connection breaks. Past ``maximumRetired``, where the platform lets a shutdown stop senders
    /// (``SocketOptions/shutdownStopsDatagramSenders``), the oldest is shut for reading first (its posters' sends
    /// then fail, and they connect anew) and read dry before it closes, so nothing sent to it is lost. Elsewhere
    /// the old sockets stay open until the listener stops (a rebind happens at most once a second).
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame]) {
        retired.append(socket)
        socket = fresh.release()
        pace = ReadPace()
        guard retired.count > Self.maximumRetired, SocketOptions.shutdownStopsDatagramSenders else { return }
        let oldest = retired.removeFirst()
        Sys.shutdownReading(oldest)
        _ = reader.read(oldest, into: &frames, limit: 1_000_000)
        Sys.close(oldest)
    }
}
