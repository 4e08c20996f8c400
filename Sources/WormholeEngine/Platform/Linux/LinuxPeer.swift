// Who holds the other end of a connected AF_UNIX socket, as Linux tells it. Sequenced packets: `SO_PEERCRED`.
// Datagrams, for which it gives no credentials: the inode of the peer socket, from the kernel's socket
// diagnostics (sock_diag, `NETLINK_SOCK_DIAG`, `UNIX_DIAG_PEER`: unprivileged, what `ss -x` reads), looked for
// among a process's descriptors in `/proc/<pid>/fd`. Every declaration here has its namesake in
// Darwin/DarwinPeer.swift.
#if canImport(Glibc)
import Glibc

extension UnixSocket {
    /// `SO_PEERCRED`: for a sequenced-packet connection, the process that called `listen(2)` on the socket it
    /// reached and its effective user. A connected datagram socket gets pid 0 and uid -1 (Linux sets them only for
    /// connection-oriented sockets and socket pairs): neither is told.
    package static func peerCredentials(_ socket: Descriptor) -> PeerCredentials {
        let fd = socket.rawValue
        var credentials = PeerCredentialsOption()
        var length = socklen_t(MemoryLayout<PeerCredentialsOption>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            Int(length) >= MemoryLayout<PeerCredentialsOption>.size
        else { return PeerCredentials() }
        return PeerCredentials(
            pid: credentials.pid > 0 ? credentials.pid : nil, user: credentials.uid != UInt32.max ? credentials.uid : nil)
    }

    /// Whether process `pid` holds the socket at the other end of the connected socket `fd`: the peer's inode
    /// (sock_diag) is among the sockets `/proc/<pid>/fd` lists. For datagrams, whose peer ``peerCredentials(_:)``
    /// does not tell. False when that process does not exist; nil when the system cannot tell (no sock_diag, no
    /// `/proc`, not allowed to read it, this process out of descriptors).
    package static func isPeer(of socket: Descriptor, heldBy pid: Int32) -> Bool? {
        guard pid > 0, let peer = SocketDiagnostics.peerInode(of: socket.rawValue) else { return nil }
        return ProcessDescriptors.holdsSocket(pid, inode: peer)
    }
}

/// `struct ucred`, which glibc declares only under `_GNU_SOURCE`: pid, uid and gid, 32 bits each.
private struct PeerCredentialsOption {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// One question to the kernel's socket diagnostics: the peer of one AF_UNIX socket.
private enum SocketDiagnostics {
    /// `NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY`, `NLM_F_REQUEST`, `NLMSG_ERROR`, `UDIAG_SHOW_PEER` and the
    /// attribute `UNIX_DIAG_PEER` (linux/netlink.h, sock_diag.h, unix_diag.h; not in Swift's Glibc module).
    static let protocolNumber: CInt = 4
    static let byFamily: UInt16 = 20
    static let request: UInt16 = 1
    static let error: UInt16 = 2
    static let showPeer: UInt32 = 0x4
    static let peerAttribute: UInt16 = 2
    /// `struct nlmsghdr` (16 bytes), `struct unix_diag_req` (24), `struct unix_diag_msg` (16).
    static let headerSize = 16
    static let requestSize = 24
    static let messageSize = 16

    /// The inode of the socket at the other end of the connected socket `fd`; nil when the kernel does not say.
    static func peerInode(of fd: CInt) -> UInt32? {
        guard let own = try? Sys.status(of: fd).identity.inode, own <= UInt64(UInt32.max) else { return nil }
        let netlink = socket(AF_NETLINK, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), protocolNumber)
        guard netlink >= 0 else { return nil }
        let descriptor = OwnedDescriptor(rawValue: netlink)
        var query = [UInt8](repeating: 0, count: headerSize + requestSize)
        query.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(headerSize + requestSize), toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: byFamily, toByteOffset: 4, as: UInt16.self)
            bytes.storeBytes(of: request, toByteOffset: 6, as: UInt16.self)
            bytes.storeBytes(of: UInt32(1), toByteOffset: 8, as: UInt32.self)
            // The request: family, protocol, padding, every state, the socket's inode, what to show, no cookie.
            bytes[headerSize] = UInt8(AF_UNIX)
            bytes.storeBytes(of: UInt32.max, toByteOffset: headerSize + 4, as: UInt32.self)
            bytes.storeBytes(of: UInt32(own), toByteOffset: headerSize + 8, as: UInt32.self)
            bytes.storeBytes(of: showPeer, toByteOffset: headerSize + 12, as: UInt32.self)
            bytes.storeBytes(of: UInt32.max, toByteOffset: headerSize + 16, as: UInt32.self)
            bytes.storeBytes(of: UInt32.max, toByteOffset: headerSize + 20, as: UInt32.self)
        }
        // Sent to the kernel (no address: port 0), which answers within the send: the reply is queued when it
        // returns, and is read without waiting.
        let sent = query.withUnsafeBytes { send(netlink, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }
        guard sent == query.count else { return nil }
        var reply = [UInt8](repeating: 0, count: 1024)
        let received = reply.withUnsafeMutableBytes { recv(netlink, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
        descriptor.close()
        guard received >= headerSize + messageSize else { return nil }
        return reply.withUnsafeBytes { bytes in peer(in: UnsafeRawBufferPointer(rebasing: bytes[0..<received])) }
    }

    /// The `UNIX_DIAG_PEER` attribute of the first message of `reply`, each length checked against what came.
    private static func peer(in reply: UnsafeRawBufferPointer) -> UInt32? {
        let length = Int(reply.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        let type = reply.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        guard type == byFamily, length >= headerSize + messageSize, length <= reply.count else { return nil }
        var offset = headerSize + messageSize
        while offset + 4 <= length {
            let size = Int(reply.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let attribute = reply.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)
            guard size >= 4, offset + size <= length else { return nil }
            if attribute == peerAttribute, size >= 8 {
                return reply.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            }
            offset += (size + 3) & ~3
        }
        return nil
    }
}

/// The descriptors of another process, as `/proc/<pid>/fd` lists them.
private enum ProcessDescriptors {
    /// Whether process `pid` has the socket of inode `inode` open (a link `socket:[<inode>]` in
    /// `/proc/<pid>/fd`). False when the process does not exist; nil when its descriptors cannot be read (no
    /// `/proc`, another user's process, this process out of descriptors).
    static func holdsSocket(_ pid: Int32, inode: UInt32) -> Bool? {
        do throws(WormholeError) {
            let folder = try Sys.open("/proc/\(pid)/fd", [.directory])
            let names = try Sys.listDirectory(folder.descriptor)
            let wanted = Array("socket:[\(inode)]".utf8)
            var target = [UInt8](repeating: 0, count: 64)
            for name in names {
                let length = target.withUnsafeMutableBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { characters in
                        guard let base = characters.baseAddress else { return -1 }
                        return readlinkat(folder.rawValue, name, base, characters.count)
                    }
                }
                if length == wanted.count, target[0..<length].elementsEqual(wanted) { return true }
            }
            return false
        } catch where error.systemErrno == .noSuchFile {
            return false
        } catch {
            return nil
        }
    }
}
#endif
