import Synchronization

/// A poster's way to one listener: a connected socket kept across posts, and segments of its own in that
/// listener's spool folder. Never waits for the listener, and takes no lock another process could hold.
///
/// Ordering rule: once a frame went to the spool, every later frame to this listener goes to the spool too,
/// until the listener has taken the segment this link writes (renamed it). The listener takes segments first,
/// then reads every connection dry, and hands over a poster's frames from its connection before or after the
/// ones it took according to their sequence numbers: a frame in a connection either preceded the spooled ones
/// or was sent after the take. So frames from one poster arrive in the order posted. A link
/// made anew for a listener an earlier link of this process wrote to (``init(…startsSpooling:)``) starts by
/// spooling, since frames of the old connection may still be unread; so does a link whose listener has
/// segments of other posters waiting, so that a process posting after another does not overtake it.
final class PeerLink: Sendable {
    enum Outcome {
        case direct
        case spooled
        /// Nobody listens on the socket any more: the listener is dead.
        case gone
        case failed(WormholeError)
    }

    /// What a link needs from its endpoint.
    struct Context: Sendable {
        var container: Container
        var poster: UInt64
        /// What this process's leases share: the per-listener cap they keep, and where damage is counted.
        var lease: SpoolLease.Terms
        var budget: SpoolBudget
        /// Stamps this process's segments, so that a listener reads them in the order they were made.
        var nextSegmentStamp: @Sendable () -> UInt64
    }

    private enum DirectResult { case sent, full, gone }

    private struct State: ~Copyable {
        var socket: OwnedDescriptor?
        var folder: SpoolFolder?
        var segment: SpoolSegment?
        /// When an append last found the segment still under its name, in uptime nanoseconds.
        var heldAt: UInt64 = 0
        /// nil until the first post looks whether others' segments wait for the listener.
        var spooling: Bool?
        /// This link's reservation in the listener's spool, held while it spools (``SpoolLease``).
        var lease: SpoolLease
        /// Bytes of shared frames sent on this connection since it was last found read to the end: what the
        /// listener may still have to map, bounded by ``Limits/maximumSharedUnread``.
        var sharedUnread = 0
        /// The memory file this connection's large frames are written into while its listener keeps up.
        var frameFile: FrameFile?
        /// Why what sits under the listener's name is not its socket, found in this send (``ListenerCheck``): not
        /// tried again until the next, and taken to be said once the lock is let go (nil again by then).
        var refusal: ListenerCheck.Refusal?
        /// The listener's process, as its registry entry named it when this link last connected.
        var registeredPid: Int32?
    }


    let listener: UInt64
    /// The transport the listener registered with.
    let transport: SocketKind
    /// A durable listener whose process is not running takes its frames in its spool, and is never gone.
    private let durable: Bool
    /// Whether every frame goes to the spool, for a listener that keeps what it has not handled across its
    /// being killed (``RegistryEntry/keepsSpooled``).
    let spoolsAlways: Bool
    private let context: Context
    private let state: Mutex<State>
    /// When this link was last used, for the endpoint's choice of which link to close.
    let lastUse = Atomic<UInt64>(0)

    init(
        listener: UInt64, transport: SocketKind, durable: Bool, context: Context,
        startsSpooling: Bool, spoolsAlways: Bool = false
    ) {
        self.listener = listener
        self.transport = transport
        self.durable = durable
        self.spoolsAlways = spoolsAlways
        self.context = context
        state = Mutex(State(spooling: startsSpooling ? true : nil, lease: SpoolLease(terms: context.lease)))
    }

    deinit {
        state.withLock { state in releaseLease(&state) }
    }

    /// Puts `frame` in the listener's socket, or else in its spool. Never blocks on the listener.
    func send(_ frame: OutgoingFrame, nudge: [UInt8]) -> Outcome {
        let outcome = state.withLock { state in send(frame, nudge: nudge, &state) }
        // A frame sent directly met no refusal; one found otherwise is said once the lock is let go.
        if case .direct = outcome { return outcome }
        state.withLock { $0.refusal.take() }?.say()
        return outcome
    }

    // Inlined into its one caller's lock closure: as a call of its own it cost about 40 instructions a post
    // (callgrind, `wormhole-bench --ping-pong`).
    @inline(__always)
    private func send(_ frame: OutgoingFrame, nudge: [UInt8], _ state: inout State) -> Outcome {
        do throws(WormholeError) {
            if state.spooling == nil {
                // A process that posts for the first time does not overtake what others spooled before.
                state.spooling = try openFolder(&state)?.hasPendingSegments() ?? false
            }
            if spoolsAlways {
                state.spooling = true
            } else if state.spooling == true, !isSegmentPending(&state) {
                // The listener has taken everything this link spooled: back to the socket.
                state.spooling = false
                releaseLease(&state)
            }
            if state.spooling == false && (frame.count <= SocketOptions.directFrameLimit(transport) || canShare(frame, &state)) {
                switch try sendDirect(frame, &state) {
                case .sent: return .direct
                case .gone: return .gone
                case .full: break
                }
            }
            // From the first spooled frame on, later ones follow it into the spool until the listener took it,
            // also when this one was spooled only for its size: a smaller one must not overtake it.
            state.spooling = true
            // The spool path must still notice a dead listener, or it would fill a dead spool forever; anything
            // else (a full backlog, the other transport, an error of this process's) leaves it to the spool.
            if !durable, case .gone = reach(&state) { return .gone }
            guard let started = try spool(frame, &state) else { return .gone }
            // A listener takes a segment whole: its bell and a nudge are needed only when one is begun.
            if started && !wake(nudge, &state) { return .gone }
            return .spooled
        } catch {
            return .failed(error)
        }
    }

    /// Whether the segment this link writes is still waiting under its name. Once the listener has taken it
    /// (renamed it), the link may go back to the socket: the listener hands over what it reads from the socket
    /// in sequence order with what it took. With no segment yet, a link that spools must write one and see it
    /// taken first.
    private func isSegmentPending(_ state: inout State) -> Bool {
        // Found there a few microseconds ago (a flood of posts): no need to look again yet.
        if state.segment != nil && Sys.uptimeNanoseconds &- state.heldAt < Limits.segmentRecheck.nanoseconds { return true }
        guard let folder = state.folder, let segment = state.segment.take() else { return true }
        guard folder.holds(segment) else { return false }
        state.segment = consume segment
        return true
    }

    /// Appends `frame` to this link's segment, creating one when needed. Returns whether the record began a
    /// segment, or nil when the listener is gone.
    private func spool(_ frame: OutgoingFrame, _ state: inout State) throws(WormholeError) -> Bool? {
        guard let folder = try openFolder(&state) else { return nil }
        let size = SpoolRecord.recordHeaderSize + frame.count + (state.segment == nil ? SpoolRecord.headerSize : 0)
        // The container's cap first: a refusal there leaves nothing reserved in the listener's spool.
        try context.budget.reserve(size)
        do throws(WormholeError) {
            try state.lease.reserve(size, in: folder)
        } catch where error.systemErrno == .noSuchFile {
            // The folder is gone, and its lease could not be made: so is the listener.
            return nil
        }
        for _ in 0..<8 {
            guard var segment = state.segment.take() else {
                let made: SpoolSegment?
                do throws(WormholeError) {
                    let stamp = context.nextSegmentStamp()
                    var created: SpoolSegment? = nil
                    try frame.withParts { (head, archive) throws(WormholeError) in
                        created = try folder.createSegment(poster: context.poster, stamp: stamp, holding: head, archive)
                    }
                    made = created.take()
                } catch where error.systemErrno == .noSuchFile {
                    return nil
                }
                // Its unnamed file was removed while this process was stopped: written again.
                guard let made else { continue }
                StopPoint.reached("spool.append")
                keep(made, size, &state)
                return true
            }
            try frame.withParts { (head, archive) throws(WormholeError) in try folder.append(head, archive, to: &segment) }
            StopPoint.reached("spool.appended")
            if folder.holds(segment) {
                keep(segment, size, &state)
                return false
            }
            // Taken while we wrote: the listener may or may not have read this record, so it goes into a new
            // segment too (named only once the record is in it, so it cannot be taken early); the listener
            // drops a copy it already has.
        }
        throw WormholeError(.system, "spool of listener \(FileName.hex(listener)) was taken eight times during one write")
    }

    /// Makes `segment`, which now holds a record of `size` bytes, the one this link appends to. The record is in
    /// the folder now, where the spool counts it: its room in the lease is given back.
    private func keep(_ segment: consuming SpoolSegment, _ size: Int, _ state: inout State) {
        state.heldAt = Sys.uptimeNanoseconds
        state.segment = consume segment
        state.lease.recordWritten()
    }

    /// Gives back this link's lease, when it stops spooling or goes away: best effort.
    private func releaseLease(_ state: inout State) {
        if let folder = state.folder { state.lease.release(in: folder) }
    }

    /// Whether `frame`, too large for the socket, may go to the listener as a shared frame: where the platform
    /// has sealed memory files, and while the shared frames this link sent that the listener has not read yet
    /// stay within ``Limits/maximumSharedUnread`` (a stopped listener holds at most that much of this poster's
    /// memory; the rest is spooled, in order).
    private func canShare(_ frame: OutgoingFrame, _ state: inout State) -> Bool {
        guard SharedFrame.isAvailable, frame.count <= SharedFrame.maximumSize else { return false }
        if state.sharedUnread > 0, let fd = state.socket?.descriptor, UnixSocket.unreadBytes(fd) == 0 {
            state.sharedUnread = 0
        }
        return state.sharedUnread == 0 || state.sharedUnread + frame.count <= Limits.maximumSharedUnread
    }

    /// Sends a frame too large for the socket through this connection's frame file, when the listener has read
    /// the one it holds, making the file (or a larger one) as needed; false leaves the frame to a shared frame:
    /// the file is still being read, the post goes to more listeners than ``Limits/frameFileListeners``, this
    /// process's frame files are at their budget or one cannot be made now, or the frame's sequence is the last
    /// there is (which a mark cannot tell from a file not read).
    /// - Throws: as ``FrameFile/send(_:over:)``.
    private func sendThroughFrameFile(_ frame: OutgoingFrame, over fd: Descriptor, _ state: inout State) throws(WormholeError) -> Bool {
        guard FrameFile.isAvailable, frame.usesFrameFiles, frame.frame.sequence != .max else { return false }
        if let file = state.frameFile, !file.isFree() {
            // A listener that has not marked it within the wait may never do (it lost the descriptor, or could
            // not map the file): let go, never to be written again, it makes room for a new one.
            guard file.hasWaited(longerThan: Limits.frameFileWait) else { return false }
            state.frameFile = nil
        }
        if let file = state.frameFile, !file.canTake(frame) { state.frameFile = nil }
        if state.frameFile == nil {
            // A file that cannot be made now (out of memory or descriptors) leaves the frame to a sealed file.
            do throws(WormholeError) { state.frameFile = try FrameFile(forFrameOf: frame.count) } catch { return false }
        }
        guard let file = state.frameFile else { return false }
        try file.send(frame, over: fd)
        return true
    }

    /// Tries the socket once, reconnecting once if the connection broke.
    private func sendDirect(_ frame: OutgoingFrame, _ state: inout State) throws(WormholeError) -> DirectResult {
        for _ in 0..<2 {
            switch reach(&state) {
            case .connected: break
            case .alive: return .full
            case .gone: return .gone
            case .failed(let error): throw error
            }
            guard let fd = state.socket?.descriptor else { return .full }
            do throws(WormholeError) {
                if frame.count > SocketOptions.directFrameLimit(transport) {
                    if try !sendThroughFrameFile(frame, over: fd, &state) { try SharedFrame.send(frame, over: fd) }
                    state.sharedUnread += frame.count
                } else {
                    try frame.withBytes { (bytes) throws(WormholeError) in try fd.send(bytes) }
                }
                return .sent
            } catch {
                switch error.peerState {
                // A shared frame's memory file could not be made (out of memory or descriptors): spooled.
                case .failed where frame.count > SocketOptions.directFrameLimit(transport): return .full
                case .busy, .otherTransport: return .full
                // This socket went bad: spooled, and the next post connects anew.
                case .unusable:
                    state.socket = nil
                    return .full
                // The listener closed this connection after reading all of it, or its socket was bound anew,
                // or it died: connect again.
                case .gone: state.socket = nil
                case .failed: throw error
                }
            }
        }
        // Connected twice and dropped twice: the listener lives but will not take us now.
        return .full
    }

    /// Rings the listener's bell and wakes it if it is idle. A full socket is harmless: a listener whose socket
    /// is full is not idle, and it looks at its bell after reading. Returns false when the listener is gone.
    private func wake(_ nudge: [UInt8], _ state: inout State) -> Bool {
        state.folder?.bell.touch()
        for _ in 0..<2 {
            switch reach(&state) {
            case .connected: break
            case .gone: return false
            case .alive, .failed: return true
            }
            guard let fd = state.socket?.descriptor else { return true }
            do throws(WormholeError) {
                try nudge.withRawBytes { (bytes) throws(WormholeError) in try fd.send(bytes) }
                return true
            } catch where error.peerState == .gone {
                state.socket = nil
            } catch {
                return true
            }
        }
        return true
    }

    /// What trying the listener's socket says of the listener, connecting unless this link is connected.
    private enum Reach {
        /// This link holds a connection to it, new or kept.
        case connected
        /// Alive, but not taking a connection now: its backlog is full, it listens with the other transport, or
        /// the socket went bad under it (``PeerState``). A durable listener is never gone: its spool collects what
        /// is posted until its identity runs again. So is a listener whose name holds what is not its socket, or
        /// leads to another process (``ListenerCheck``): it may only be stopped, and gets its spool when it resumes.
        case alive
        /// Nobody listens there.
        case gone
        /// An error that says nothing of the listener (this process is out of descriptors, say).
        case failed(WormholeError)
    }

    /// The one place that says what a failed connect means for this link (a failed send on a connection is
    /// read where it happens: gone there means the connection closed, and the link connects again).
    private func reach(_ state: inout State) -> Reach {
        guard state.socket == nil else { return .connected }
        guard state.refusal == nil else { return .alive }
        do throws(WormholeError) {
            guard let socket = try connect(&state) else { return .alive }
            state.socket = consume socket
            // Shared frames sent on an earlier connection were read, or went with it; so may the mark its frame
            // file waits for.
            state.sharedUnread = 0
            state.frameFile = nil
            return .connected
        } catch {
            switch error.peerState {
            case .busy, .otherTransport, .unusable: return .alive
            case .gone: return durable ? .alive : .gone
            case .failed: return .failed(error)
            }
        }
    }

    /// A new connection to the listener's socket, once ``ListenerCheck`` found the file and the process at the
    /// other end to be the listener's; nil when they are not (nothing was sent), with the state's refusal saying why.
    private func connect(_ state: inout State) throws(WormholeError) -> OwnedDescriptor? {
        try ListenerCheck.connect(
            transport, to: listener, in: context.container, knownPid: &state.registeredPid, refusal: &state.refusal)
    }

    /// The listener's spool folder, opened once; nil when it no longer exists (its listener is gone).
    private func openFolder(_ state: inout State) throws(WormholeError) -> SpoolFolder? {
        if let folder = state.folder { return folder }
        do throws(WormholeError) {
            let folder = try SpoolFolder(listener: listener, in: context.container, create: false)
            state.folder = folder
            return folder
        } catch where error.systemErrno == .noSuchFile {
            return nil
        }
    }
}
