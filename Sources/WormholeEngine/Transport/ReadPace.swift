/// How many messages the next read of a ready socket asks for. A read that asks for a batch makes the kernel try
/// for a second message, and on Linux that failed try costs about half a microsecond, a tenth of a message's
/// whole way between two processes; a `recv(2)` loop elsewhere pays a whole system call for it. So while the
/// socket has held one message at a time, as when two processes answer each other, reads ask for one, and
/// every ``Limits/readPaceProbeInterval``th asks for a batch to notice a queue building; a read that finds more than one goes
/// back to batches. Reads that must empty the socket (``MessageReader/read(_:into:limit:)``) ignore it, and so
/// does a round whose wait found more than one socket ready (``applies(to:)``).

struct ReadPace {

    /// Whether a round's reads may follow their pace: only when its wait found one socket ready. With several,
    /// each is read dry in the order polled: a poster's older connection holds what it sent before its newer
    /// one's, and a read of one message would leave the rest behind the newer one's.
    static func applies(to events: some Sequence<PollSet.Entry>) -> Bool {
        var ready = 0
        for event in events where event.isReady {
            ready += 1
            if ready > 1 { return false }
        }
        return ready == 1
    }

    /// Reads in a row that found one message, counting the batch read that began the run.
    private var singleReads = 0

    /// Whether the next read asks for one message.
    var asksForOne: Bool { singleReads % Limits.readPaceProbeInterval != 0 }

    /// Records a read: how many messages it took, and whether it asked for one.
    mutating func record(_ read: Int, askedForOne: Bool) {
        if askedForOne {
            singleReads += 1
        } else if read == 1 {
            singleReads = 1
        } else if read > 1 {
            singleReads = 0
        }
    }
}
