import Synchronization

/// How other threads end the receive thread's wait: the wake pipe, the wake socket, and the five flags that let
/// a wake and the thread's wait meet without a lock in the thread's rounds.
///
/// The thread waits in one of two ways: in a poll of the pipe's read end with its sockets (``prepare(_:)``), or,
/// once it has a wake socket (``useSocket(_:)``, a datagram socket connected to the one it reads), in a read of its
/// socket (``waitInRead(_:)``): one system call a wake-up instead of two. A wake (``wake()``) sets `woken`, writes
/// a byte into the pipe, which ends a poll, and, while the thread waits in a read, sends the wake socket's empty
/// datagram, which ends the read: once a wait. Either the thread sees `woken` before it waits in a read, or the
/// wake sees `waitsInRead`: each is stored before the other is loaded, sequentially consistent. The thread takes
/// the wake (``takeWake()``), clearing `woken` and emptying the pipe, before it runs what was handed to it: a wake
/// that comes meanwhile sets `woken` again, and ends the next wait.
///
/// The pipe and the wake socket are written and closed under one lock, so that nothing is written to either after
/// it closed (its number may be another file's by then). They close as the thread ends (``close()``), or when
/// this goes away without the thread ever running.
struct ReceiveWake: ~Copyable, Sendable {
    private struct Descriptors: ~Copyable {
        var pipe: PipeEnds
        /// The wake socket, if any.
        var socket: Descriptor?
    }

    private let descriptors: Mutex<Descriptors>
    /// The pipe's read end, which only the thread reads and polls, until it closes the pipe as it ends.
    private let pipeRead: Descriptor
    /// Set by every wake, before it writes the pipe; cleared by the thread as it takes the wake.
    private let woken = Atomic<Bool>(false)
    /// Set while the thread waits, or is about to wait, in a read of its socket rather than in a poll; a wake
    /// that sends the wake socket's datagram takes it down.
    private let waitsInRead = Atomic<Bool>(false)
    /// Whether there is a wake socket (``useSocket(_:)``): read by the thread alone.
    private let socketSet = Atomic<Bool>(false)
    /// Set when a wake sent the wake socket's datagram during the thread's wait in a read.
    private let sent = Atomic<Bool>(false)
    /// Set when the wake socket could not reach the socket it is connected to.
    private let socketFailed = Atomic<Bool>(false)

    /// Makes the wake pipe.
    /// - Throws: what making a pipe threw (out of descriptors).
    init() throws(WormholeError) {
        let pipe = try Sys.makePipe()
        pipeRead = pipe.read
        descriptors = Mutex(Descriptors(pipe: pipe))
    }

    /// Ends the thread's wait now (a full pipe already does): its poll sees the pipe; a read it waits in gets an
    /// empty datagram. Any thread may call it, at any time: after ``close()`` it only sets `woken`.
    func wake() {
        woken.store(true, ordering: .sequentiallyConsistent)
        descriptors.withLock { descriptors in
            guard descriptors.pipe.isOpen else { return }
            let fd = descriptors.pipe.write
            var byte: UInt8 = 1
            _ = withUnsafeBytes(of: &byte) { try? fd.writeSome($0) }
            // One datagram a wait: the first wake takes the flag, and the others find it down.
            if let socket = descriptors.socket, waitsInRead.exchange(false, ordering: .sequentiallyConsistent) {
                sent.store(true, ordering: .sequentiallyConsistent)
                if !socket.sendWake() { socketFailed.store(true, ordering: .relaxed) }
            }
        }
    }

    /// Takes `socket`, connected to the socket the thread reads, for wakes while it waits in a read; nil drops
    /// the one there is (the socket read was bound anew). Once closed, `socket` is closed at once. Called by the
    /// thread itself.
    func useSocket(_ socket: consuming OwnedDescriptor?) {
        let fd = socket?.release()
        let set = descriptors.withLock { descriptors -> Bool in
            descriptors.socket?.close()
            descriptors.socket = descriptors.pipe.isOpen ? fd : nil
            if !descriptors.pipe.isOpen { fd?.close() }
            return descriptors.socket != nil
        }
        socketSet.store(set, ordering: .relaxed)
    }

    /// Whether there is a wake socket: the thread may wait in a read (``waitInRead(_:)``).
    var hasSocket: Bool { socketSet.load(ordering: .relaxed) }

    /// Whether the thread waits, or is about to wait, in a read, and no wake has come for that wait yet.
    var isWaitingInRead: Bool { waitsInRead.load(ordering: .sequentiallyConsistent) }

    /// Whether a wake came that the thread has not taken yet (``takeWake()``).
    var isWoken: Bool { woken.load(ordering: .sequentiallyConsistent) }

    /// Waits in `receive` (a read of the thread's socket that waits) instead of a poll. Returns what `receive`
    /// returned: whether anything came, or nil when it could not wait so (a poll is then owed). A wake that came
    /// before the read returns true at once, without reading. The caller then takes the wake if ``isWoken``.
    ///
    /// A wake socket that does not reach the socket read (its send failed, or the read ran out of time although a
    /// wake sent it a datagram: it is connected to another socket) is dropped: the thread polls until it has
    /// another (``useSocket(_:)``). A wake that came just as the read ran out drops it as well, which costs the
    /// next few rounds a poll.
    func waitInRead(_ receive: () -> Bool?) -> Bool? {
        sent.store(false, ordering: .sequentiallyConsistent)
        waitsInRead.store(true, ordering: .sequentiallyConsistent)
        let result = woken.load(ordering: .sequentiallyConsistent) ? true : receive()
        waitsInRead.store(false, ordering: .sequentiallyConsistent)
        let missed = result == false && sent.load(ordering: .sequentiallyConsistent)
        if missed || socketFailed.exchange(false, ordering: .relaxed) { useSocket(nil) }
        return result
    }

    /// Empties `set`, then adds the pipe's read end as its first descriptor; the caller adds its own after it,
    /// and after a wait finds a wake in the first entry being ready.
    func prepare(_ set: inout PollSet) {
        set.removeAll()
        set.add(pipeRead)
    }

    /// Takes a wake, on the thread: clears `woken`, then empties the pipe.
    func takeWake() {
        woken.store(false, ordering: .sequentiallyConsistent)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { scratch.deallocate() }
        while let n = try? pipeRead.readSome(into: scratch), n > 0 {}
    }

    /// Closes the pipe and the wake socket, as the thread ends; later wakes write nothing.
    func close() {
        descriptors.withLock { descriptors in
            descriptors.pipe.close()
            descriptors.socket?.close()
            descriptors.socket = nil
        }
    }

    deinit {
        // The wake socket is set only by the running thread, which closes it as it ends: this is for a thread
        // that never ran. The pipe closes as it is dropped.
        descriptors.withLock { descriptors in
            descriptors.socket?.close()
            descriptors.socket = nil
        }
    }
}
