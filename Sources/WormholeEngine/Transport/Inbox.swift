/// The receiving end of a listener's transport: the sockets its receive thread polls and reads. Owned by the
/// receive thread once it runs; its sockets close when it is released.

protocol Inbox: AnyObject {
    /// Appends the descriptors to poll for incoming messages.
    func addPollDescriptors(to events: inout PollSet)
    /// Changes whenever what ``addPollDescriptors(to:)`` adds would change: a set made with the same shape is
    /// polled again as it is.
    var pollShape: UInt64 { get }
    /// How long the receive thread may wait for them, in milliseconds, when shorter than its idle interval.
    var pollTimeout: Int32? { get }
    /// Reads a batch from each descriptor that `events` (the ones it added, in order, with their results)
    /// says is ready.
    func receiveReady(_ events: PollSet.SubSequence, into frames: inout [Frame])
    /// Waits in a read of its one socket for at most `timeoutMilliseconds` (more than 0) instead of a poll, and
    /// reads what came: one system call a wake-up instead of two. Returns whether anything came (an empty
    /// datagram that wakes the read included), or nil when it cannot wait so now (it has more than one socket
    /// to watch, or its socket failed or cannot be set to wait), and read nothing.
    func receiveWaiting(timeoutMilliseconds: Int32, into frames: inout [Frame]) -> Bool?
    /// Whether what the last read found suggests a poster may have spooled (``MessageReader/suggestsSpooling``).
    var suggestsSpooling: Bool { get }
    /// Whether the last read found any message at all (``MessageReader/readAny``).
    var readAny: Bool { get }
    /// Reads everything waiting now. Returns false when some of it cannot be read yet (no descriptor to accept
    /// a connection, or the round's byte budget is spent).
    func receiveAll(into frames: inout [Frame]) -> Bool
    /// Takes `fresh`, bound anew under the socket's name, as the socket posters reach; what was sent to the old
    /// one is still read, as far as it can be. Clears ``boundSocketFailure``.
    func rebind(_ fresh: consuming OwnedDescriptor, into frames: inout [Frame])
    /// Makes posters' sends fail from now on (they spool, or find the listener gone), while what they sent
    /// before stays readable: a listener that ends reads what it can after this, and nothing sent meanwhile
    /// goes into a socket about to close.
    func seal()
    /// Why the socket posters reach stopped working, or nil: a read or an accept of it failed with an error that
    /// does not pass (anything but would-block, an interruption, or this process's lack of descriptors), or a
    /// wait reported an error on it. From then on it is not polled, so the receive thread does not spin on it; the
    /// receive thread binds the socket anew.
    var boundSocketFailure: String? { get }
}

extension SocketKind {
    /// The inbox of a socket of this transport, bound by ``UnixSocket/bind(_:directory:directoryPath:name:backlog:)``.
    func makeInbox(_ socket: consuming OwnedDescriptor, reader: MessageReader) -> any Inbox {
        switch self {
        case .sequencedPacket: SeqpacketInbox(socket, reader: reader)
        case .datagram: DatagramInbox(socket, reader: reader)
        }
    }
}
