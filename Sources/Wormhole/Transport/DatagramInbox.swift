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
    private(set) var boundSocketFailure: String?
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

    /// A failed socket is polled as -1, which a wait passes over.
    func addPollDescriptors(to events: inout [pollfd]) {
        events.append(pollfd(fd: boundSocketFailure == nil ? socket : -1, events: Int16(POLLIN), revents: 0))
        for old in retired { events.append(pollfd(fd: old, events: Int16(POLLIN), revents: 0)) }
    }

    func receiveReady(_ events: ArraySlice<pollfd>, into frames: inout [Frame]) {
        // A batch per socket, as posters may keep it full: what remains wakes the next poll.
        reader.beginRound()
        let paced = ReadPace.applies(to: events)
        for event in events where event.revents != 0 {
            if event.fd == socket {
                readBound(event.revents, into: &frames, paced: paced)
            } else if !reader.read(event.fd, into: &frames, limit: 512) {
                closeRetired(event.fd)
            }
        }
    }

    func receiveAll(into frames: inout [Frame]) -> Bool {
        reader.beginRound()
        readBound(0, into: &frames, paced: false, limit: 100_000)
        for old in retired where !reader.read(old, into: &frames, limit: 100_000) { closeRetired(old) }
        // What waits in a failed socket may precede what its posters spooled: the spool waits for the rebind.
        return !reader.isOverBudget && boundSocketFailure == nil
    }

    /// Closes an old socket whose read failed: its posters' sends then fail, and they connect to the new one.
    private func closeRetired(_ fd: CInt) {
        retired.removeAll { $0 == fd }
        Sys.close(fd)
    }

    /// Reads the socket posters reach, unless it failed; a failure of its read, or an error a wait reported on
    /// it (`revents`), marks it failed.
    private func readBound(_ revents: Int16, into frames: inout [Frame], paced: Bool, limit: Int = 512) {
        guard boundSocketFailure == nil else { return }
        if revents & Int16(POLLERR | POLLNVAL) != 0 {
            boundSocketFailure = "a wait reported an error on it"
            return
        }
        do throws(WormholeError) {
            try InjectedFault.failBoundSocket()
        } catch {
            boundSocketFailure = "\(error)"
            return
        }
        let open = paced
            ? reader.read(socket, into: &frames, limit: limit, pace: &pace) : reader.read(socket, into: &frames, limit: limit)
        if !open { boundSocketFailure = reader.lastFailure.map { "\($0)" } ?? "its read failed" }
    }

    /// Keeps the old socket, read like the new one: posters connected to it keep sending there until their
    /// connection breaks. Past ``maximumRetired``, where the platform lets a shutdown stop senders
    /// (``SocketOptions/shutdownStopsDatagramSenders``), the oldest is shut for reading first (its posters' sends
    /// then fail, and they connect anew) and read dry before it closes, so nothing sent to it is lost. Elsewhere
    /// the old sockets stay open until the listener stops (a rebind happens at most once a second).
    ///
    /// A socket replaced because it failed is read once more, and kept like the others if that read works;
    /// otherwise it is closed (what it held cannot be read).
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame]) {
        let old = socket
        let failed = boundSocketFailure != nil
        boundSocketFailure = nil
        socket = fresh.release()
        pace = ReadPace()
        if failed && !reader.read(old, into: &frames, limit: 1_000_000) {
            reader.warn("a failed socket could not be read again and is closed: what it still held is lost")
            Sys.close(old)
            return
        }
        retired.append(old)
        guard retired.count > Self.maximumRetired, SocketOptions.shutdownStopsDatagramSenders else { return }
        let oldest = retired.removeFirst()
        Sys.shutdownReading(oldest)
        _ = reader.read(oldest, into: &frames, limit: 1_000_000)
        Sys.close(oldest)
    }
}
