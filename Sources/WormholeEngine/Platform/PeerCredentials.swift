/// Who holds the other end of a connected AF_UNIX socket, as far as the system tells
/// (``UnixSocket/peerCredentials(_:)``): what a poster compares with the registry before a connection counts as a
/// listener's.
///
/// What each system tells, and when:
/// - Linux, sequenced packets (`SO_PEERCRED`): the process that called `listen(2)` on the socket reached, and its
///   effective user, as they were then.
/// - Linux, datagrams: nothing (`SO_PEERCRED` gives pid 0 and uid -1 for a connected datagram socket, measured on
///   Linux 6.18); ``UnixSocket/isPeer(of:heldBy:)`` answers instead.
/// - Apple platforms, datagrams: the pid (`LOCAL_PEERPID`: the last process that used the peer socket, which for a
///   listener's socket is the listener), but no user: xnu keeps credentials (`LOCAL_PEERCRED`) only for sockets
///   that connect through `listen(2)` (`unp_connect`, `UNP_HAVEPC`), and fails it with `EINVAL` for datagrams.
package struct PeerCredentials: Equatable, Sendable {
    /// The peer's process; nil where the system does not tell.
    package var pid: Int32?
    /// The peer's effective user; nil where the system does not tell.
    package var user: UInt32?

    init(pid: Int32? = nil, user: UInt32? = nil) {
        self.pid = pid
        self.user = user
    }
}
