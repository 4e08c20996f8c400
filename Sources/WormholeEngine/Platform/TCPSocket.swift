// TCP client sockets: what the bridge to other hosts speaks to a NATS server with. A connection's bytes are a
// stream, read and written whole by the layer above; the calls here only wait, move bytes and say errors.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

package enum TCPSocket {
    /// A connected, blocking socket to `host` (a name or an address) on `port`: each address the name has is
    /// tried in turn, each for at most `timeoutMilliseconds`. Writes wait at most `sendTimeoutMilliseconds` for
    /// room, so that a peer that stops reading fails a write rather than hold it for ever; Nagle's delay is off.
    /// - Throws: ``WormholeError/Code/system`` naming the host when the name does not resolve or no address
    ///   takes the connection.
    package static func connect(
        host: String, port: UInt16, timeoutMilliseconds: Int, sendTimeoutMilliseconds: Int = 10_000
    ) throws(WormholeError) -> OwnedDescriptor {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamType
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            let reason = resolved == 0 ? "no address" : String(cString: gai_strerror(resolved))
            throw WormholeError(.system, "\(host) does not resolve: \(reason)")
        }
        defer { freeaddrinfo(first) }
        var lastError = WormholeError(.system, "\(host):\(port) has no address to connect to")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            next = entry.pointee.ai_next
            guard let address = entry.pointee.ai_addr else { continue }
            do throws(WormholeError) {
                return try connect(
                    family: entry.pointee.ai_family, address: address, length: entry.pointee.ai_addrlen,
                    name: "\(host):\(port)", timeoutMilliseconds: timeoutMilliseconds,
                    sendTimeoutMilliseconds: sendTimeoutMilliseconds)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private static func connect(
        family: CInt, address: UnsafePointer<sockaddr>, length: socklen_t, name: String, timeoutMilliseconds: Int,
        sendTimeoutMilliseconds: Int
    ) throws(WormholeError) -> OwnedDescriptor {
        let fd = try valueOrErrno("socket") { socket(family, streamType | socketFlags, 0) }
        let descriptor = OwnedDescriptor(rawValue: fd)
        try prepare(fd)
        // Without blocking, so that the wait is bounded: poll for the connection, then ask how it went.
        let flags = try valueOrErrno("fcntl") { fcntl(fd, F_GETFL) }
        _ = try valueOrErrno("fcntl") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        if systemStreamConnect(fd, address, length) != 0 {
            let error = Errno(currentErrno())
            guard error == .inProgress || error == .interrupted else {
                throw WormholeError(.system, "connect \(name)", errno: error)
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = try valueOrErrno("poll") { poll(&poller, 1, CInt(clamping: timeoutMilliseconds)) }
            guard ready > 0 else { throw WormholeError(.timedOut, "connect \(name): no answer in \(timeoutMilliseconds) ms") }
            var failure: CInt = 0
            var size = socklen_t(MemoryLayout<CInt>.size)
            _ = try valueOrErrno("getsockopt") { getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size) }
            guard failure == 0 else { throw WormholeError(.system, "connect \(name)", errno: failure) }
        }
        _ = try valueOrErrno("fcntl") { fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        var on: CInt = 1
        _ = setsockopt(fd, noDelayLevel, TCP_NODELAY, &on, socklen_t(MemoryLayout<CInt>.size))
        var timeout = timeval(
            tv_sec: .init(sendTimeoutMilliseconds / 1000), tv_usec: .init(sendTimeoutMilliseconds % 1000 * 1000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }

    /// Writes all of `bytes`, waiting for room.
    /// - Throws: ``WormholeError/Code/timedOut`` when the peer took nothing for the send timeout; a system error
    ///   when the connection is gone.
    package static func send(_ socket: Descriptor, _ bytes: UnsafeRawBufferPointer) throws(WormholeError) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let sent = systemStreamSend(socket.rawValue, rest.baseAddress, rest.count, sendFlags)
            if sent < 0 {
                let error = Errno(currentErrno())
                if error == .interrupted { continue }
                if error == .wouldBlock { throw WormholeError(.timedOut, "send: the server took nothing for the send timeout") }
                throw WormholeError(.system, "send", errno: error)
            }
            offset += sent
        }
    }

    /// Reads what has come, at most `buffer.count` bytes, waiting for some; 0 when the peer closed the connection.
    /// - Throws: ``WormholeError/Code/timedOut`` past the receive timeout (``setReceiveTimeout(_:milliseconds:)``);
    ///   a system error when the connection failed.
    package static func receive(_ socket: Descriptor, into buffer: UnsafeMutableRawBufferPointer) throws(WormholeError) -> Int {
        while true {
            let count = recv(socket.rawValue, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            let error = Errno(currentErrno())
            if error == .interrupted { continue }
            if error == .wouldBlock { throw WormholeError(.timedOut, "recv: nothing came within the receive timeout") }
            throw WormholeError(.system, "recv", errno: error)
        }
    }

    /// Bounds each wait of ``receive(_:into:)`` to `milliseconds` (0: no bound), after which it throws
    /// ``WormholeError/Code/timedOut``.
    package static func setReceiveTimeout(_ socket: Descriptor, milliseconds: Int) {
        var timeout = timeval(tv_sec: .init(milliseconds / 1000), tv_usec: .init(milliseconds % 1000 * 1000))
        _ = setsockopt(socket.rawValue, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Ends the connection both ways, which wakes a thread waiting in ``receive(_:into:)``; the descriptor stays
    /// open for its owner to close.
    package static func shutdown(_ socket: Descriptor) {
        _ = shutdownBoth(socket.rawValue)
    }
}

private func systemStreamConnect(_ fd: CInt, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> CInt {
    connect(fd, address, length)
}

private func systemStreamSend(_ fd: CInt, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: CInt) -> Int {
    send(fd, bytes, count, flags)
}
