/// The receive thread's drain of its spool: takes what posters spooled, reads everything the inbox holds, and
/// hands both over in the order posted (``SpoolReader/handOver(_:direct:holdingDirect:_:)``), in chunks: a
/// hand-over stops while the observers hold too much, and the receive loop resumes it (``resume()``) when they
/// have room again.
///
/// If the inbox cannot read everything now (connections not accepted for want of descriptors, a socket that
/// failed, a round's byte budget spent), the segments taken wait for a later drain, and what is read meanwhile
/// gathers here until then: a poster whose segment was taken goes back to its socket, and what it sends there
/// must not overtake what it spooled.

struct SpoolDrain: ~Copyable {
    /// What the drain did: whether it read any message from the sockets (taken or dropped), and whether held
    /// frames it was to offer again must wait for a later drain.
    struct Outcome {
        var readMessages = false
        var heldNotOffered = false
    }

    private var reader: SpoolReader
    private let handlers: SpoolReader.Handlers
    /// Set while taken segments wait for the inbox to be read whole.
    private var waiting: [Frame]? = nil

    init(folder: SpoolFolder, handlers: SpoolReader.Handlers) {
        reader = SpoolReader(folder: folder)
        self.handlers = handlers
    }

    /// Whether taken segments wait for the inbox to be read whole.
    var isWaiting: Bool { waiting != nil }

    /// Whether a hand-over stopped because the observers hold too much, and waits to be resumed.
    var isHandingOver: Bool { reader.isHandingOver }

    /// Goes on with a hand-over that stopped, until it is done or the observers hold too much again.
    mutating func resume() {
        reader.resumeHandOver(handlers)
    }

    /// Keeps frames read from the sockets with what waits, or after a hand-over that stopped, and returns true;
    /// false when nothing waits, and the caller hands them over.
    mutating func keepIfWaiting(_ frames: [Frame]) -> Bool {
        if reader.keepAfterHandOver(frames) { return true }
        guard waiting != nil else { return false }
        waiting?.append(contentsOf: frames)
        return true
    }

    /// Takes what posters spooled (with `includingHeld`, held frames too), reads everything `inbox` holds, and
    /// hands both over in order, or keeps them waiting when the inbox cannot be read whole.
    /// The receive loop resumes a hand-over that stopped rather than drain again; one that does finishes it
    /// first, whole (``SpoolReader/handOver(_:direct:holdingDirect:_:)``).
    mutating func drain(_ inbox: any Inbox, includingHeld: Bool, warning: (String) -> Void) -> Outcome {
        // Its socket failed and nothing was taken yet: what waits there may precede what was spooled. Nothing is
        // taken until the socket is bound again, so posters keep spooling. Held frames are offered then.
        if inbox.boundSocketFailure != nil && waiting == nil {
            return Outcome(readMessages: false, heldNotOffered: includingHeld)
        }
        // Taken before and not handed over yet: nothing new is taken until it is.
        let taken = reader.take(includingHeld: includingHeld, newSegments: waiting == nil)
        StopPoint.reached("spool.drain")
        var direct = waiting ?? []
        waiting = nil
        guard inbox.receiveAll(into: &direct) else {
            // Held in memory up to the backlog's bound; past it, handed over with what was taken as it is (what
            // waits unread in a socket may then come after what its poster spooled), rather than grow without end.
            let bound = DeliveryBacklog.Bound.standard
            if direct.count < bound.notifications && direct.reduce(0, { $0 + $1.byteCount }) < bound.bytes {
                waiting = direct
            } else {
                warning("cannot read all its sockets and holds too much: handing over what it has")
                reader.handOver(taken, direct: direct, handlers)
            }
            return Outcome(readMessages: true, heldNotOffered: includingHeld)
        }
        let readMessages = inbox.readAny
        // A drain that offers held frames again holds back what the sockets held and nothing observes yet too:
        // sent while no observer was added, it waits with what was spooled meanwhile.
        reader.handOver(taken, direct: direct, holdingDirect: includingHeld, handlers)
        return Outcome(readMessages: readMessages, heldNotOffered: false)
    }

    /// As the listener ends: finishes a hand-over that stopped, then hands over what was taken before and still
    /// waits, with `last` (what the sockets held at the end), in order. A durable listener's spool keeps what it
    /// holds back for its identity's next run, what the sockets held included, and what it handed over last
    /// (``SpoolReader/keepSeen(_:)``).
    mutating func finish(last: [Frame], durable: Bool) {
        // A hand-over that stopped is done first, whole: it holds what was posted before.
        reader.resumeHandOver(handlers, pausing: false)
        if !last.isEmpty || waiting != nil {
            let direct = (waiting ?? []) + last
            waiting = nil
            reader.handOver(reader.take(includingHeld: false, newSegments: false), direct: direct, holdingDirect: true, handlers)
            // Not stopped for the observers as the listener ends: what it holds would go with it.
            reader.resumeHandOver(handlers, pausing: false)
        }
        if durable { reader.keepSeen(handlers) }
    }
}
