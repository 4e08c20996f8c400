// AF_UNIX SOCK_SEQPACKET sockets: message boundaries, per-connection order, and a sender that learns at once
// when its peer is full (EAGAIN) or gone (ECONNREFUSED, ECONNRESET, EPIPE).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum UnixSocket {
    /// The longest path `sun_path` holds, less its terminating NUL.
    static let maximumPathLength: Int = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new non-blocking, close-on-exec seqpacket socket.
    static func make() throws(WormholeError) -> OwnedDescriptor {
        let fd = try valueOrErrno("socket") { socket(AF_UNIX, Sys.seqpacket | Sys.cloexec, 0) }
        let descriptor = OwnedDescriptor(rawValue: fd)
        #if canImport(Darwin)
        // Darwin has neither SOCK_CLOEXEC nor MSG_NOSIGNAL: set both per socket.
        var on: CInt = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<CInt>.size))
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        #endif
        _ = try valueOrErrno("fcntl") { fcntl(fd, F_SETFL, O_NONBLOCK) }
        return descriptor
    }

    /// The address of `name` inside the directory open as `directory` whose path is `directoryPath`.
    ///
    /// A path too long for `sun_path` is reached through `/proc/self/fd/<directory>/<name>` on Linux.
    static func withAddress<R>(
        directory: CInt, directoryPath: String, name: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(WormholeError) -> R {
        var path = directoryPath + "/" + name
        if path.utf8.count > maximumPathLength {
            #if os(Linux)
            path = "/proc/self/fd/\(directory)/\(name)"
            #endif
            guard path.utf8.count <= maximumPathLength else {
                throw WormholeError(.invalidContainer, "socket path \(directoryPath)/\(name) is longer than \(maximumPathLength) bytes")
            }
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A listening socket bound to `name` in the directory; the socket file is made 0600.
    static func listen(directory: CInt, directoryPath: String, name: String, backlog: CInt = 128)
        throws(WormholeError) -> OwnedDescriptor
    {
        let descriptor = try make()
        let fd = descriptor.rawValue
        let bound = try withAddress(directory: directory, directoryPath: directoryPath, name: name) { address, length in
            systemBind(fd, address, length) == 0 ? 0 : currentErrno()
        }
        guard bound == 0 else { throw WormholeError(.system, "bind \(directoryPath)/\(name)", errno: bound) }
        try Sys.changeMode(name, 0o600, relativeTo: directory)
        _ = try valueOrErrno("listen") { systemListen(fd, backlog) }
        return descriptor
    }

    /// Connects without blocking; throws with `EAGAIN` when the listener's backlog is full.
    static func connect(directory: CInt, directoryPath: String, name: String) throws(WormholeError) -> OwnedDescriptor {
        let descriptor = try make()
        let fd = descriptor.rawValue
        let result = try withAddress(directory: directory, directoryPath: directoryPath, name: name) { address, length in
            while true {
                if systemConnect(fd, address, length) == 0 { return CInt(0) }
                let error = currentErrno()
                if error != EINTR { return error }
            }
        }
        guard result == 0 else { throw WormholeError(.system, "connect \(name)", errno: result) }
        return descriptor
    }

    /// Accepts one pending connection, or returns nil when none is pending.
    static func accept(_ listener: CInt) throws(WormholeError) -> OwnedDescriptor? {
        // accept4 is not exported to Swift here; the listener is close-on-exec and only this thread accepts.
        let fd = systemAccept(listener, nil, nil)
        if fd >= 0 {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            return OwnedDescriptor(rawValue: fd)
        }
        let error = currentErrno()
        if error == EAGAIN || error == EWOULDBLOCK || error == EINTR || error == ECONNABORTED { return nil }
        throw WormholeError(.system, "accept", errno: error)
    }

    /// Sends one whole message without blocking. Throws `EAGAIN` when the peer's buffer is full.
    static func send(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) throws(WormholeError) {
        _ = try valueOrErrno("send") { systemSend(fd, bytes.baseAddress, bytes.count, Sys.sendFlags) }
    }

    /// Receives one message into `buffer`. Returns its real length (larger than the buffer when it was cut),
    /// 0 when the peer closed the connection, or nil when nothing is waiting.
    static func receive(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer) throws(WormholeError) -> Int? {
        #if canImport(Glibc)
        let flags = CInt(MSG_DONTWAIT) | CInt(MSG_TRUNC)
        #else
        let flags = MSG_DONTWAIT
        #endif
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, flags)
            if n >= 0 { return n }
            let error = currentErrno()
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return nil }
            if error == ECONNRESET { return 0 }
            throw WormholeError(.system, "recv", errno: error)
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
