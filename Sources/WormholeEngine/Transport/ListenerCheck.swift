import Synchronization

/// What makes a connection a listener's: checked before it counts as that listener's and before anything is sent
/// on it.
///
/// `connect(2)` follows a symbolic link and reaches whoever is bound at its end, so whatever a process put under a
/// listener's name in `listeners/` (a link to a socket elsewhere, a socket of its own) would get what is posted to
/// that listener, and a stopped listener would never know. Two checks stand in the way:
/// 1. Before the connect, the name, looked at beneath the container's `listeners/` descriptor without following
///    links (`fstatat(2)` with `AT_SYMLINK_NOFOLLOW`), is a socket owned by this user: a clear reason, early, and
///    no connection at all to whatever a link names.
/// 2. After it, the process at the other end is the one the registry names, and runs as this user
///    (``UnixSocket/peerCredentials(_:)``; on Linux datagrams, which carry no credentials, the peer socket is
///    found among that process's descriptors, ``UnixSocket/isPeer(of:heldBy:)``). This one closes the race of the
///    first: a file swapped between the look and the connect.
///
/// A connection that fails either is closed with nothing sent on it. Its caller spools what it had for the
/// listener, as for a listener that takes no connection now, never taking the listener for gone: the listener
/// reads it when it resumes (and binds its socket again when it finds its file replaced). Each refusal is
/// counted (``refusals``) at once, and said by the caller once it holds no lock (``Refusal/say()``), at most once
/// a second. Both checks are made once per connection, not per post: a link keeps its connection across posts.
enum ListenerCheck {
    /// Why a connection was refused: counted when made, said with ``say()``.
    struct Refusal: Sendable {
        /// The socket's name in `listeners/`.
        let name: String
        /// What is wrong with it, or with the process at its other end.
        let reason: String

        /// Says the refusal as a warning, at most once a second in a process (the count has every one). Not to be
        /// called under a lock: the application's log handler may post.
        func say() {
            guard ListenerCheck.warning.isDue() else { return }
            Log.warning(
                "listeners/\(name) \(reason): not the listener's socket; nothing was sent on it, and what is posted to that listener is spooled")
        }
    }

    /// Connections this process refused since it started: what sat under a listener's name, or at the other end,
    /// was not the listener.
    static let refusals = Atomic<Int>(0)
    fileprivate static let warning = RepeatedWarning()
    /// This process's effective user, which owns the container and everything in it: read once.
    private static let user = Sys.effectiveUserID

    /// Connects a poster's link with `transport` to the socket of `listener`, once its file passed the first
    /// check and the process at the other end the second: the one the registry names for it. That is `knownPid`
    /// while it still is (an earlier connection of the link found it); else the entry is read now (a durable
    /// listener's next run registers anew under the same name), and what it names kept in `knownPid`. So a link
    /// reads the registry once, not at every connection. Returns nil when what is there is not the listener's:
    /// nothing was sent, the connection is closed, the refusal counted, and `refusal` says why.
    /// - Throws: the system's error of the look, the connect or the entry's read, which ``PeerState`` reads as
    ///   for any connect: a missing file is `ENOENT` (gone); a full backlog `EAGAIN`; a socket of the other
    ///   transport `EPROTOTYPE`; this process out of descriptors `EMFILE`.
    static func connect(
        _ transport: SocketKind, to listener: UInt64, in container: Container, knownPid: inout Int32?,
        refusal: inout Refusal?
    ) throws(WormholeError) -> OwnedDescriptor? {
        let name = RegistryEntry.socketName(listener)
        guard let socket = try connectToFile(transport, name, in: container, refusal: &refusal) else { return nil }
        if let known = knownPid, problem(withPeerOf: socket.descriptor, expected: known) == nil { return socket }
        guard let registered = try registeredPid(listener, in: container) else {
            refuse(name, "has no readable registry entry to check its peer against", &refusal)
            return nil
        }
        knownPid = registered
        if let reason = problem(withPeerOf: socket.descriptor, expected: registered) {
            refuse(name, reason, &refusal)
            return nil
        }
        return socket
    }

    /// Connects with `transport` to the socket `name` in the container's `listeners/`, once its file passed the
    /// first check and, when `pid` is given, the process at the other end is that one, of this user. Returns nil
    /// when they are not: the connection is closed, the refusal counted, and `refusal` says why.
    /// - Throws: as the other ``connect(_:to:in:knownPid:refusal:)``.
    static func connect(
        _ transport: SocketKind, name: String, in container: Container, pid: Int32?, refusal: inout Refusal?
    ) throws(WormholeError) -> OwnedDescriptor? {
        guard let socket = try connectToFile(transport, name, in: container, refusal: &refusal) else { return nil }
        guard let pid else { return socket }
        if let reason = problem(withPeerOf: socket.descriptor, expected: pid) {
            refuse(name, reason, &refusal)
            return nil
        }
        return socket
    }

    /// The first check, then the connect; nil (refused) when the file is not a socket of this user.
    private static func connectToFile(
        _ transport: SocketKind, _ name: String, in container: Container, refusal: inout Refusal?
    ) throws(WormholeError) -> OwnedDescriptor? {
        let directory = container.listenersDescriptor
        let status = try Sys.status(name, relativeTo: directory, followLinks: false)
        if let reason = problem(with: status) {
            refuse(name, reason, &refusal)
            return nil
        }
        // Where a file swapped in now is reached: the second check must refuse it.
        StopPoint.reached("listener.connect")
        return try UnixSocket.connect(transport, directory: directory, directoryPath: container.listenersPath, name: name)
    }

    private static func refuse(_ name: String, _ reason: String, _ refusal: inout Refusal?) {
        refusals.add(1, ordering: .relaxed)
        refusal = Refusal(name: name, reason: reason)
    }

    /// Why a socket file of the container's `listeners/`, as `fstatat(2)` sees it without following links, is not
    /// a listener's: nil when it is a socket owned by this user.
    static func problem(with status: FileStatus) -> String? {
        if status.isSymbolicLink { return "is a symbolic link" }
        guard status.isSocket else { return "is not a socket" }
        guard status.owner == user else { return "is owned by user \(status.owner), not this one" }
        return nil
    }

    /// Why the peer of the connected socket `fd` is not process `pid` of this user: nil when it is.
    static func problem(withPeerOf fd: Descriptor, expected pid: Int32) -> String? {
        let peer = UnixSocket.peerCredentials(fd)
        if let held = peer.user, held != user {
            return "is held by user \(held), not this one"
        }
        if let held = peer.pid {
            return held == pid ? nil : "is held by process \(held), not \(pid), which the registry names"
        }
        switch UnixSocket.isPeer(of: fd, heldBy: pid) {
        case true?: return nil
        case false?: return "is not held by process \(pid), which the registry names"
        case nil: return "could not be told to be held by process \(pid), which the registry names"
        }
    }

    /// The pid the registry names for `listener` now, read from its entry's file (not from a snapshot, so that a
    /// durable listener's next run is known once it registered); nil when it has no entry, or a damaged one.
    /// - Throws: the system's error when this process is out of descriptors or memory to read it.
    private static func registeredPid(_ listener: UInt64, in container: Container) throws(WormholeError) -> Int32? {
        let name = FileName.hex(listener)
        do throws(WormholeError) {
            let bytes = try StoredFile.read(name, in: container.registryDescriptor, limit: Limits.maximumRegistryEntrySize)
            let entry = try RegistryFormat.decodeEntry(bytes)
            return entry.listener == listener ? entry.pid : nil
        } catch where error.isOutOfResources {
            throw error
        } catch {
            return nil
        }
    }
}
