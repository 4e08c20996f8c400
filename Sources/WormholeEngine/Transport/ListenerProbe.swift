/// The one answer to "does a process listen on this socket?", asked by connecting to it.

enum ListenerProbe {
    enum Answer: Equatable {
        /// A socket took the connection: a live listener (which may still be stopped).
        case listening
        /// Alive, but not taking connections now (a full backlog), or bound with the other transport.
        case busy
        /// Nobody listens there: its process is gone.
        case gone
        /// The attempt failed in a way that says nothing about the listener: this process is out of descriptors,
        /// or what sits under the listener's name is not its socket (``ListenerCheck``), which a live, stopped
        /// listener cannot prevent.
        case unknown
    }

    /// Connects to the socket `name` in the container's `listeners/` with `transport`, and closes at once. What is
    /// not a socket of this user (a symbolic link, say: ``ListenerCheck``) is nobody's listener: gone, so that a
    /// claim of a durable identity's name moves it aside rather than be kept from the name by it.
    static func probe(_ name: String, _ transport: SocketKind, in container: Container) -> Answer {
        probe(name, transport, pid: nil, refused: .gone, in: container)
    }

    /// Whether the process `entry` names listens on its socket. Something else under its name, or at the other
    /// end, says nothing of that listener (it may be stopped): unknown, never gone, so that nobody removes it.
    static func probe(_ entry: RegistryEntry, in container: Container) -> Answer {
        probe(entry.socketName, entry.transport, pid: entry.pid, refused: .unknown, in: container)
    }

    private static func probe(
        _ name: String, _ transport: SocketKind, pid: Int32?, refused: Answer, in container: Container
    ) -> Answer {
        var refusal: ListenerCheck.Refusal?
        do throws(WormholeError) {
            guard let connection = try ListenerCheck.connect(transport, name: name, in: container, pid: pid, refusal: &refusal)
            else {
                refusal?.say()
                return refused
            }
            connection.close()
            return .listening
        } catch {
            switch error.peerState {
            case .busy, .otherTransport: return .busy
            case .gone: return .gone
            case .unusable, .failed: return .unknown
            }
        }
    }
}
