#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A poster's way to one listener: a connected socket kept across posts, and that listener's spool.
///
/// Ordering rule: once a frame went to the spool, every later frame to this listener goes to the spool too,
/// until the poster sees the spool empty under its lock. The listener empties its spool only after reading
/// every connection dry under that same lock, so frames from one poster arrive in the order posted.
final class PeerLink: Sendable {
    enum Outcome {
        case direct
        case spooled
        /// Nobody listens on the socket any more: the listener is dead.
        case gone
        case failed(WormholeError)
    }

    private enum DirectResult { case sent, full, gone }

    private struct State: ~Copyable {
        var socket: OwnedDescriptor?
        var spool: Spool?
        /// Starts true: a new link cannot know whether this process left frames in the spool through a link it
        /// dropped, so its first post looks at the spool under its lock before using the socket.
        var spooling = true
    }

    let listener: UInt64
    /// A durable listener whose process is not running takes its frames in its spool, and is never gone.
    private let durable: Bool
    private let container: Container
    private let state = Mutex(State())

    init(listener: UInt64, durable: Bool, container: Container) {
        self.listener = listener
        self.durable = durable
        self.container = container
    }

    /// Puts `frame` in the listener's socket, or else in its spool. Never blocks on the listener.
    func send(_ frame: [UInt8], nudge: [UInt8]) -> Outcome {
        state.withLock { state in
            do throws(WormholeError) {
                if !state.spooling && frame.count <= Limits.maximumDirectFrameSize {
                    switch try sendDirect(frame, &state) {
                    case .sent: return .direct
                    case .gone: return .gone
                    case .full: break
                    }
                }
                // The spool path must still notice a dead listener, or it would fill a dead spool forever.
                if !durable && state.socket == nil {
                    do throws(WormholeError) {
                        state.socket = try connect()
                    } catch where error.errno == ECONNREFUSED || error.errno == ENOENT {
                        return .gone
                    } catch {
                        // EAGAIN: its backlog is full, so it is alive but not accepting; spool.
                    }
                }
                guard let spool = try openSpool(&state) else { return .gone }
                let outcome = try spool.withLock { (size) throws(WormholeError) -> Outcome in
                    if size == 0 && state.spooling && frame.count <= Limits.maximumDirectFrameSize {
                        // The listener has caught up: go back to the socket.
                        state.spooling = false
                        switch try sendDirect(frame, &state) {
                        case .sent: return .direct
                        case .gone: return .gone
                        case .full: break
                        }
                    }
                    let record = SpoolRecord.encode(frame)
                    guard size + record.count <= GroupNotificationCenter.maximumSpoolSize else {
                        throw WormholeError(
                            .spoolFull,
                            "spool of listener \(RegistryEntry.hex(listener)) holds \(size) bytes; "
                                + "\(record.count) more would pass \(GroupNotificationCenter.maximumSpoolSize)")
                    }
                    try spool.append(record, at: size)
                    state.spooling = true
                    return .spooled
                }
                if case .spooled = outcome, !wake(nudge, &state) { return .gone }
                return outcome
            } catch {
                return .failed(error)
            }
        }
    }

    /// Tries the socket once, reconnecting once if the connection broke.
    private func sendDirect(_ frame: [UInt8], _ state: inout State) throws(WormholeError) -> DirectResult {
        for _ in 0..<2 {
            if state.socket == nil {
                do throws(WormholeError) {
                    state.socket = try connect()
                } catch where error.isWouldBlock {
                    return .full
                } catch where error.errno == ECONNREFUSED || error.errno == ENOENT {
                    return durable ? .full : .gone
                }
            }
            guard let fd = state.socket?.rawValue else { return .full }
            do throws(WormholeError) {
                try frame.withRawBytes { (bytes) throws(WormholeError) in try UnixSocket.send(fd, bytes) }
                return .sent
            } catch where error.isWouldBlock || error.errno == EMSGSIZE || error.errno == ENOBUFS {
                return .full
            } catch where error.isPeerGone {
                state.socket = nil
            }
        }
        // Connected twice and dropped twice: the listener lives but will not take us now.
        return .full
    }

    /// Wakes an idle listener to look at its spool. A full socket is harmless: a listener whose socket is full
    /// is not idle, and looks at its spool after reading. Returns false when the listener turns out to be gone.
    private func wake(_ nudge: [UInt8], _ state: inout State) -> Bool {
        for _ in 0..<2 {
            if state.socket == nil {
                do throws(WormholeError) {
                    state.socket = try connect()
                } catch where error.errno == ECONNREFUSED || error.errno == ENOENT {
                    return durable
                } catch {
                    return true
                }
            }
            guard let fd = state.socket?.rawValue else { return true }
            do throws(WormholeError) {
                try nudge.withRawBytes { (bytes) throws(WormholeError) in try UnixSocket.send(fd, bytes) }
                return true
            } catch where error.isPeerGone {
                state.socket = nil
            } catch {
                return true
            }
        }
        return true
    }

    private func connect() throws(WormholeError) -> OwnedDescriptor {
        try UnixSocket.connect(
            directory: container.listenersDescriptor, directoryPath: container.listenersPath,
            name: RegistryEntry.socketName(listener))
    }

    /// The listener's spool, opened once; nil when it no longer exists (its listener is gone).
    private func openSpool(_ state: inout State) throws(WormholeError) -> Spool? {
        if let spool = state.spool { return spool }
        do throws(WormholeError) {
            let spool = try Spool(name: RegistryEntry.spoolName(listener), in: container.spoolDescriptor, .existing)
            state.spool = spool
            return spool
        } catch where error.errno == ENOENT {
            return nil
        }
    }
}
