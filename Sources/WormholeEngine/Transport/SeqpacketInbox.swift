/// The inbox of the sequenced-packet transport: a listening socket, and a connection per poster.
///
/// Used by its listener's receive thread alone; what each read touches goes without run-time exclusivity checks.

final class SeqpacketInbox: Inbox {

    /// One accepted connection, in which round it was last read, and how many messages its next read asks for.
    private struct Connection {
        let socket: HeldDescriptor
        var lastRead: UInt64
        var pace = ReadPace()
        var fd: Descriptor { socket.descriptor }
    }

    /// The sockets this inbox owns, each closed as it leaves: the listening one and a connection per poster.
    private var listeningSocket: HeldDescriptor { didSet { connectionsChanged &+= 1 } }
    /// Changed on every change of `connections` but what a read notes in one (``pollShape``).
    @exclusivity(unchecked) private var connections: [Connection] = []
    @exclusivity(unchecked) private var connectionsChanged: UInt64 = 0
    private var listening: Descriptor { listeningSocket.descriptor }
    private let reader: MessageReader
    /// While accept fails for want of descriptors, the listening socket is left alone until then (0: it is not).
    @exclusivity(unchecked) private var acceptPausedUntil: UInt64 = 0
    /// The rounds of reads so far, which tell which connections were read least recently.
    @exclusivity(unchecked) private var rounds: UInt64 = 0
    private var lastDescriptorWarning: UInt64 = 0
    private(set) var boundSocketFailure: String?
    /// Set by ``seal()``: a connection accepted from then on is shut for reading at once.
    private var sealed = false

    init(_ socket: consuming OwnedDescriptor, reader: MessageReader) {
        listeningSocket = HeldDescriptor(socket)
        self.reader = reader
    }

    /// Whether the listening socket is polled and accepted from: not while it failed, nor during a pause for want
    /// of descriptors, which ends here once its time passed (so that the clock is read only during a pause).
    private var isAccepting: Bool {
        guard boundSocketFailure == nil else { return false }
        guard acceptPausedUntil != 0 else { return true }
        guard Sys.uptimeNanoseconds >= acceptPausedUntil else { return false }
        acceptPausedUntil = 0
        return true
    }

    var pollTimeout: Int32? { isAccepting ? nil : Limits.acceptPause.milliseconds }

    /// The listening socket is polled while it accepts (the top bit), then each connection.
    var pollShape: UInt64 { connectionsChanged & ~(1 << 63) | (isAccepting ? 1 << 63 : 0) }

    var suggestsSpooling: Bool { reader.suggestsSpooling }

    var readAny: Bool { reader.readAny }

    func addPollDescriptors(to events: inout PollSet) {
        events.add(isAccepting ? listening : nil)
        for connection in connections { events.add(connection.fd) }
    }

    func receiveReady(_ events: PollSet.SubSequence, into frames: inout [Frame]) {
        guard let first = events.first else { return }
        reader.beginRound()
        // Connections first, by the descriptors polled: accepting may close some and reorder the rest.
        var closed: [Descriptor] = []
        rounds += 1
        let paced = ReadPace.applies(to: events.dropFirst())
        for event in events.dropFirst() where event.isReady {
            guard let fd = event.fd, let index = connections.firstIndex(where: { $0.fd == fd }) else { continue }
            let open =
                paced
                ? reader.read(fd, into: &frames, limit: Limits.readsPerRound, pace: &connections[index].pace)
                : reader.read(fd, into: &frames, limit: Limits.readsPerRound)
            if !open { closed.append(fd) }
            connections[index].lastRead = rounds
        }
        close(closed)
        if first.hasFailed && boundSocketFailure == nil {
            boundSocketFailure = "a wait reported an error on it"
        } else if first.isReady {
            _ = acceptAll(&frames)
        }
    }

    /// A listening socket and its connections are always more than one socket to watch.
    func receiveWaiting(timeoutMilliseconds: Int32, into frames: inout [Frame]) -> Bool? { nil }

    func receiveAll(into frames: inout [Frame]) -> Bool {
        reader.beginRound()
        let accepted = acceptAll(&frames)
        var closed: [Descriptor] = []
        for index in connections.indices {
            let fd = connections[index].fd
            if !reader.read(fd, into: &frames, limit: Limits.readsWhenEmptying) { closed.append(fd) }
        }
        close(closed)
        return accepted && !reader.isOverBudget
    }

    /// Shuts each connection for reading, and each one accepted later as it is accepted. The listening socket is
    /// left as it is: its name is gone by then, so no poster connects any more, and the connections it holds
    /// are accepted and read.
    func seal() {
        sealed = true
        for connection in connections { Sys.shutdownReading(connection.fd) }
    }

    /// Accepts what waits on the old listening socket, then listens on the fresh one; the connections stay.
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame]) {
        acceptPausedUntil = 0
        let failed = boundSocketFailure != nil
        boundSocketFailure = nil
        if !acceptAll(&frames, rebinding: true) && failed {
            reader.warn("connections still pending on a failed socket are lost as it closes; their posters connect again")
        }
        listeningSocket = HeldDescriptor(fresh)
    }

    /// Accepts every pending connection. Past ``Limits/maximumConnections``, or when the process is out of
    /// descriptors, closes the connections read least recently, gracefully (their frames go into `frames`).
    /// Returns false when connections may still be pending.
    private func acceptAll(_ frames: inout [Frame], rebinding: Bool = false) -> Bool {
        // Connections may wait unaccepted: what they hold may precede what their posters spooled.
        guard boundSocketFailure == nil else { return false }
        while true {
            let accepted: OwnedDescriptor?
            do throws(WormholeError) {
                if !rebinding { try InjectedFault.failBoundSocket() }
                accepted = try listening.accept()
            } catch where error.isOutOfResources {
                // Out of descriptors: make room, and leave the listening socket alone for a moment rather than
                // spin on it.
                closeLeastRecent(max(1, connections.count / 8), &frames)
                let now = Sys.uptimeNanoseconds
                acceptPausedUntil = now + Limits.acceptPause.nanoseconds
                // Said at most every ten seconds: the condition can last.
                if now &- lastDescriptorWarning > Limits.descriptorWarningInterval.nanoseconds {
                    lastDescriptorWarning = now
                    reader.warn("listener is out of descriptors (\(error)); closing idle connections and accepting more slowly")
                }
                return false
            } catch {
                // Its pending connections wait for the rebind, which accepts them before closing it.
                if !rebinding { boundSocketFailure = "accept failed: \(error)" }
                return false
            }
            guard let connection = accepted else { return true }
            if sealed { Sys.shutdownReading(connection.descriptor) }
            if connections.count >= Limits.maximumConnections { closeLeastRecent(1, &frames) }
            connections.append(Connection(socket: HeldDescriptor(connection), lastRead: rounds))
            connectionsChanged &+= 1
        }
    }

    /// Closes `count` connections, those read least recently, without losing what they hold: after
    /// `shutdown(SHUT_RD)` their posters' sends fail (and they connect again), and what was sent before is read.
    private func closeLeastRecent(_ count: Int, _ frames: inout [Frame]) {
        connections.sort { $0.lastRead < $1.lastRead }
        for index in connections.indices.prefix(count) {
            let fd = connections[index].fd
            Sys.shutdownReading(fd)
            _ = reader.read(fd, into: &frames, limit: Limits.readsWhenClosing)
        }
        // Closed as they leave.
        connections.removeFirst(min(count, connections.count))
        connectionsChanged &+= 1
    }

    /// Closes the connections `closed`, as they leave.
    private func close(_ closed: [Descriptor]) {
        guard !closed.isEmpty else { return }
        connections.removeAll { closed.contains($0.fd) }
        connectionsChanged &+= 1
    }
}
