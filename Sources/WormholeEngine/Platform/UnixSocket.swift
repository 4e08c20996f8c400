// AF_UNIX sockets of either transport: message boundaries, one sender's messages in order, and a sender that
// learns at once when its peer is full or gone (see PeerState for what each errno means).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

package enum UnixSocket {
    /// The longest path `sun_path` holds, less its terminating NUL: 107 bytes on Linux, 103 on Darwin.
    static let maximumPathLength: Int = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new non-blocking, close-on-exec socket of `transport`, set up for it (``SocketOptions``).
    static func make(_ transport: SocketKind) throws(WormholeError) -> OwnedDescriptor {
        let fd = try valueOrErrno("socket") { socket(AF_UNIX, type(of: transport) | socketFlags, 0) }
        let descriptor = OwnedDescriptor(rawValue: fd)
        try SocketOptions.prepare(fd, for: transport)
        _ = try valueOrErrno("fcntl") { fcntl(fd, F_SETFL, O_NONBLOCK) }
        return descriptor
    }

    /// A receiving socket of `transport` bound to `name` in the directory open as `directory`, whose path is
    /// `directoryPath`; the socket file is made 0600. A sequenced-packet socket also listens for connections.
    package static func bind(
        _ transport: SocketKind, directory: Descriptor, directoryPath: String, name: String,
        backlog: CInt = Limits.listenBacklog
    ) throws(WormholeError) -> OwnedDescriptor {
        let descriptor = try make(transport)
        let fd = descriptor.rawValue
        _ = try SocketAddress.with(directory: directory.rawValue, directoryPath: directoryPath, name: name) {
            (address, length) throws(WormholeError) in
            try valueOrErrno("bind \(directoryPath)/\(name)") { systemBind(fd, address, length) }
        }
        try Sys.changeMode(name, 0o600, relativeTo: directory)
        SocketOptions.prepareReceiving(fd, for: transport)
        if transport == .sequencedPacket { _ = try valueOrErrno("listen") { systemListen(fd, backlog) } }
        return descriptor
    }

    /// Connects without blocking to the socket `name`. A sequenced-packet connect throws `EAGAIN` when the
    /// listener's backlog is full; connecting to a socket of the other transport throws `EPROTOTYPE`.
    package static func connect(
        _ transport: SocketKind, directory: Descriptor, directoryPath: String, name: String
    ) throws(WormholeError) -> OwnedDescriptor {
        let descriptor = try make(transport)
        let fd = descriptor.rawValue
        _ = try SocketAddress.with(directory: directory.rawValue, directoryPath: directoryPath, name: name) {
            (address, length) throws(WormholeError) in
            try valueOrErrno("connect \(name)") { systemConnect(fd, address, length) }
        }
        return descriptor
    }

    /// Accepts one pending connection of a sequenced-packet socket, or returns nil when none is pending (a
    /// connection its poster gave up before it was accepted included).
    package static func accept(_ socket: Descriptor) throws(WormholeError) -> OwnedDescriptor? {
        // accept4 is not exported to Swift here; the listener is close-on-exec and only this thread accepts.
        let fd: CInt
        do throws(WormholeError) {
            guard let accepted = try valueOrNothing("accept", { systemAccept(socket.rawValue, nil, nil) }) else { return nil }
            fd = accepted
        } catch where error.systemErrno == .connectionAborted {
            return nil
        }
        let connection = OwnedDescriptor(rawValue: fd)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        return connection
    }

    /// Sends one whole message without blocking; a failure's ``WormholeError/peerState`` says why.
    package static func send(_ socket: Descriptor, _ bytes: UnsafeRawBufferPointer) throws(WormholeError) {
        try InjectedFault.failSend()
        _ = try valueOrErrno("send") { systemSend(socket.rawValue, bytes.baseAddress, bytes.count, sendFlags) }
    }

    /// Sends an empty datagram, which ends a wait in a read of the socket it reaches. Returns false when it cannot
    /// reach that socket (its peer is gone or refuses it); a full queue (`EAGAIN`, Darwin's `ENOBUFS`), which
    /// ends the wait too, is no failure, nor is this process's lack of memory.
    package static func sendWake(_ socket: Descriptor) -> Bool {
        guard systemSend(socket.rawValue, nil, 0, sendFlags) < 0 else { return true }
        let error = Errno(currentErrno())
        return error == .wouldBlock || error == .interrupted || Errno.outOfResources.contains(error)
    }

    /// Receives one message as `header` describes, with the descriptors it carried when `header` has control
    /// space (close-on-exec where the platform can say so at once). Returns its real length where the platform
    /// tells it (Linux: larger than the buffer when it was cut; elsewhere a cut message fills the buffer), 0 when
    /// the peer closed the connection, or nil when nothing is waiting.
    /// With `waiting`, on a socket set by ``SocketOptions/waitReceiving(_:milliseconds:)``, waits for the message
    /// at most as long as it was set to (nil when none came).
    static func receiveMessage(_ fd: CInt, _ header: inout msghdr, waiting: Bool = false) throws(WormholeError) -> Int? {
        do throws(WormholeError) {
            return try valueOrNothing("recvmsg") { recvmsg(fd, &header, waiting ? waitingReceiveFlags : receiveFlags) }
        } catch where error.systemErrno == .connectionReset {
            // Nothing was received: no control data either.
            header.msg_controllen = 0
            header.msg_flags = 0
            return 0
        }
    }
}

private func systemConnect(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> CInt {
    connect(fd, address, length)
}
private func systemBind(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> CInt {
    bind(fd, address, length)
}
private func systemListen(_ fd: CInt, _ backlog: CInt) -> CInt { listen(fd, backlog) }
private func systemAccept(_ fd: CInt, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?) -> CInt {
    accept(fd, address, length)
}
private func systemSend(_ fd: CInt, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: CInt) -> Int {
    send(fd, bytes, count, flags)
}
