/// The inbox of the datagram transport: one socket that every poster sends to. A poster's datagrams queue in
/// the order sent; a full queue fails its send at once (EAGAIN on Linux, ENOBUFS on Darwin) and it spools.

final class DatagramInbox: Inbox {

    /// A socket this inbox was bound to before a rebind.
    private struct Retired {
        let socket: HeldDescriptor
        /// Sealed (``SocketOptions/sealDatagramSocket(_:)``): nothing more reaches it, and it closes once read dry.
        var sealed: Bool
        var fd: Descriptor { socket.descriptor }
    }

    /// The sockets this inbox owns, each closed as it leaves: the one bound under the name now, and those it was
    /// bound to before, oldest first.
    private var bound: HeldDescriptor { didSet { pollShape &+= 1 } }
    private var retired: [Retired] = [] { didSet { pollShape &+= 1 } }
    private var socket: Descriptor { bound.descriptor }
    private(set) var boundSocketFailure: String? { didSet { pollShape &+= 1 } }
    /// Changed whenever a socket is added, closed, or fails.
    private(set) var pollShape: UInt64 = 0
    private let reader: MessageReader
    /// How many messages the next read of `socket` asks for; the retired ones are read in batches.
    private var pace = ReadPace()
    /// How long a read of `socket` that waits may wait, as it was last set; nil until then, and 0 when it could
    /// not be set.
    private var waitLimit: Int32?

    init(_ socket: consuming OwnedDescriptor, reader: MessageReader) {
        bound = HeldDescriptor(socket)
        self.reader = reader
    }

    var pollTimeout: Int32? { nil }

    var suggestsSpooling: Bool { reader.suggestsSpooling }

    var readAny: Bool { reader.readAny }

    /// A failed socket keeps its place as no descriptor, which a wait passes over.
    func addPollDescriptors(to events: inout PollSet) {
        events.add(boundSocketFailure == nil ? socket : nil)
        for old in retired { events.add(old.fd) }
    }

    func receiveReady(_ events: PollSet.SubSequence, into frames: inout [Frame]) {
        // A batch per socket, as posters may keep it full: what remains wakes the next poll.
        reader.beginRound()
        let paced = ReadPace.applies(to: events)
        // The old sockets first: a poster whose old socket was sealed sends to the new one next, and what it sent
        // before must come first.
        for event in events where event.isReady && event.fd != socket {
            guard let fd = event.fd else { continue }
            if !reader.read(fd, into: &frames, limit: Limits.readsPerRound) { closeRetired(fd) }
        }
        closeSealed(into: &frames)
        if let bound = events.first(where: { $0.fd == socket }), bound.isReady {
            readBound(failed: bound.hasFailed, into: &frames, paced: paced)
        }
    }

    func receiveWaiting(timeoutMilliseconds: Int32, into frames: inout [Frame]) -> Bool? {
        guard retired.isEmpty, boundSocketFailure == nil, timeoutMilliseconds > 0, waitLimit != 0 else { return nil }
        if waitLimit != timeoutMilliseconds {
            // Refused, the socket stays polled until it is bound anew.
            let allowed = waitLimit != nil || SocketOptions.allowWaitingReceives(socket)
            waitLimit = allowed && SocketOptions.waitReceiving(socket, milliseconds: timeoutMilliseconds) ? timeoutMilliseconds : 0
            if waitLimit == 0 { return nil }
        }
        reader.beginRound()
        readBound(failed: false, into: &frames, paced: true, waiting: true)
        return reader.readAny || reader.roundWakes > 0
    }

    func receiveAll(into frames: inout [Frame]) -> Bool {
        reader.beginRound()
        for old in retired where !reader.read(old.fd, into: &frames, limit: Limits.readsWhenEmptying) { closeRetired(old.fd) }
        closeSealed(into: &frames)
        readBound(failed: false, into: &frames, paced: false, limit: Limits.readsWhenEmptying)
        // What waits in a failed socket may precede what its posters spooled: the spool waits for the rebind.
        return !reader.isOverBudget && boundSocketFailure == nil
    }

    func seal() {
        _ = SocketOptions.sealDatagramSocket(socket)
        for index in retired.indices where !retired[index].sealed {
            retired[index].sealed = SocketOptions.sealDatagramSocket(retired[index].fd)
        }
    }

    /// Closes an old socket: one whose read failed (its posters' sends then fail, and they connect to the new
    /// one), or a sealed one read dry.
    private func closeRetired(_ fd: Descriptor) {
        retired.removeAll { $0.fd == fd }
    }

    /// Reads each sealed socket to its end and closes it; one the round's byte budget leaves unread waits for
    /// the next round.
    private func closeSealed(into frames: inout [Frame]) {
        for old in retired where old.sealed && !reader.isOverBudget {
            if !reader.read(old.fd, into: &frames, limit: Limits.readsWhenClosing) {
                reader.warn("an old socket could not be read to its end and is closed: what it still held is lost")
            } else if reader.isOverBudget {
                continue
            }
            closeRetired(old.fd)
        }
    }

    /// Reads the socket posters reach, unless it failed; a failure of its read, or an error a wait reported on
    /// it (`failed`), marks it failed.
    private func readBound(
        failed: Bool, into frames: inout [Frame], paced: Bool, limit: Int = Limits.readsPerRound, waiting: Bool = false
    ) {
        guard boundSocketFailure == nil else { return }
        if failed {
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
            ? reader.read(socket, into: &frames, limit: limit, pace: &pace, waiting: waiting)
            : reader.read(socket, into: &frames, limit: limit)
        if !open { boundSocketFailure = reader.lastFailure.map { "\($0)" } ?? "its read failed" }
    }

    /// Seals the old socket (``SocketOptions/sealDatagramSocket(_:)``): posters connected to it then fail at
    /// once and connect to the new one, or spool; what they sent before is read, and it closes. So no socket
    /// outlives a rebind, and nothing sent to it is lost. One that cannot be sealed is kept and read like the new
    /// one; past ``Limits/maximumRetiredSockets`` of those, the oldest is read and closed (what reaches it between that read and
    /// its close would be lost, which is said).
    ///
    /// A socket replaced because it failed is read once more; if that read fails, what it held is lost (said).
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame]) {
        let old = bound
        let failed = boundSocketFailure != nil
        boundSocketFailure = nil
        bound = HeldDescriptor(fresh)
        pace = ReadPace()
        waitLimit = nil
        // The old socket is read whole now if it can be: a round that spent its budget would leave it for later.
        reader.beginRound()
        let sealed = SocketOptions.sealDatagramSocket(old.descriptor)
        if failed && !reader.read(old.descriptor, into: &frames, limit: Limits.readsWhenClosing) {
            // Closed as `old` goes.
            reader.warn("a failed socket could not be read again and is closed: what it still held is lost")
            return
        }
        retired.append(Retired(socket: old, sealed: sealed))
        closeSealed(into: &frames)
        let unsealed = retired.filter { !$0.sealed }
        guard unsealed.count > Limits.maximumRetiredSockets, let oldest = unsealed.first else { return }
        reader.warn("an old socket that could not be sealed is closed: a message sent to it as it closes is lost")
        _ = reader.read(oldest.fd, into: &frames, limit: Limits.readsWhenClosing)
        closeRetired(oldest.fd)
    }
}
