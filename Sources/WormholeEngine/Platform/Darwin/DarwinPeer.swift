// Who holds the other end of a connected AF_UNIX socket, as xnu tells it (bsd/kern/uipc_usrreq.c,
// `uipc_ctloutput`): `LOCAL_PEERPID` for any connected socket, datagrams included (the peer socket's `last_pid`,
// the last process that used it); `LOCAL_PEERCRED` only where `unp_connect` cached credentials, which it does for
// sockets that connect through `listen(2)`: a connected datagram socket gets `EINVAL`. Every declaration here has
// its namesake in Linux/LinuxPeer.swift.
#if canImport(Darwin)
import Darwin

extension UnixSocket {
    /// `LOCAL_PEERPID`, and the user of `LOCAL_PEERCRED` where the kernel keeps one (not for datagrams).
    static func peerCredentials(_ socket: Descriptor) -> PeerCredentials {
        let fd = socket.rawValue
        var credentials = PeerCredentials()
        var pid: pid_t = 0
        var length = socklen_t(MemoryLayout<pid_t>.size)
        if getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID, &pid, &length) == 0, pid > 0 {
            credentials.pid = pid
        }
        var cred = xucred()
        length = socklen_t(MemoryLayout<xucred>.size)
        if getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED, &cred, &length) == 0, cred.cr_version == UInt32(XUCRED_VERSION) {
            credentials.user = cred.cr_uid
        }
        return credentials
    }

    /// Never needed: ``peerCredentials(_:)`` tells the pid of every connected socket's peer here. Nil: not told.
    static func isPeer(of socket: Descriptor, heldBy pid: Int32) -> Bool? { nil }
}
#endif
