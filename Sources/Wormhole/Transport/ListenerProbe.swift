/// The one answer to "does a process listen on this socket?", asked by connecting to it.
enum ListenerProbe {
    enum Answer: Equatable {
        /// A socket took the connection: a live listener (which may still be stopped).
        case listening
        /// Alive, but not taking connections now (a full backlog), or bound with the other transport.
        case busy
        /// Nobody listens there: its process is gone.
        case gone
        /// The attempt failed in a way that says nothing about the listener.
        case unknown
    }

    /// Connects to the socket `name` in the container's `listeners/` with `transport`, and closes at once.
    static func probe(_ name: String, _ transport: SocketKind, in container: Container) -> Answer {
        do throws(WormholeError) {
            try UnixSocket.connect(
                transport, directory: container.listenersDescriptor, directoryPath: container.listenersPath, name: name
            ).close()
            return .listening
        } catch {
            switch error.peerState {
            case .busy, .otherTransport: return .busy
            case .gone: return .gone
            case .unusable, .failed: return .unknown
            }
        }
    }

    /// Whether a process listens on the socket of `entry`.
    static func probe(_ entry: RegistryEntry, in container: Container) -> Answer {
        probe(entry.socketName, entry.transport, in: container)
    }
}
