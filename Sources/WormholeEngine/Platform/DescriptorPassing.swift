// Passing a descriptor with a message over an AF_UNIX socket (`SCM_RIGHTS`), and taking the descriptors a
// received message carried. The control-message layout (`cmsghdr`, then the data aligned to `size_t`) is
// spelled out because the CMSG_* macros do not reach Swift.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

package enum DescriptorPassing {
    // What `CMSG_ALIGN` rounds to (``alignment``) is the platform's: `size_t` on Linux, 32 bits on Darwin.
    private static func aligned(_ size: Int) -> Int { (size + alignment - 1) & ~(alignment - 1) }
    private static let headerSize = aligned(MemoryLayout<cmsghdr>.size)
    private static let rights = CInt(1)  // SCM_RIGHTS

    /// The control space one message needs to carry `count` descriptors (`CMSG_SPACE`).
    static func controlSpace(descriptors count: Int) -> Int {
        headerSize + aligned(count * MemoryLayout<CInt>.size)
    }

    /// The control length that takes exactly `count` descriptors (`CMSG_LEN`): given as a receive's control
    /// length, the kernel installs no more than that, and discards any others without this process touching them.
    static func controlLength(descriptors count: Int) -> Int {
        headerSize + count * MemoryLayout<CInt>.size
    }

    /// Sends `bytes` as one message carrying `descriptor`, without blocking; a failure's
    /// ``WormholeError/peerState`` says why, as for ``UnixSocket/send(_:_:)``.
    package static func send(_ socket: Descriptor, _ bytes: UnsafeRawBufferPointer, passing file: Descriptor) throws(WormholeError) {
        try InjectedFault.failSend()
        let space = controlSpace(descriptors: 1)
        let control = UnsafeMutableRawBufferPointer.allocate(byteCount: space, alignment: alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0)
        var header = cmsghdr()
        header.cmsg_len = .init(controlLength(descriptors: 1))
        header.cmsg_level = SOL_SOCKET
        header.cmsg_type = rights
        control.storeBytes(of: header, as: cmsghdr.self)
        control.storeBytes(of: file.rawValue, toByteOffset: headerSize, as: CInt.self)
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        _ = try withUnsafeMutablePointer(to: &vector) { (vector) throws(WormholeError) -> Int in
            var message = msghdr()
            message.msg_iov = vector
            message.msg_iovlen = 1
            message.msg_control = control.baseAddress
            message.msg_controllen = .init(space)
            return try valueOrErrno("sendmsg") { sendmsg(socket.rawValue, &message, UnixSocket.sendFlags) }
        }
    }

    /// The descriptors of every `SCM_RIGHTS` control message in `control` (the first `length` bytes); the
    /// caller owns them and must close each. Reads only whole headers and whole descriptors within `length`.
    static func descriptors(in control: UnsafeRawBufferPointer, length: Int) -> [Descriptor] {
        var found: [Descriptor] = []
        var offset = 0
        let end = min(length, control.count)
        while offset + MemoryLayout<cmsghdr>.size <= end {
            let header = control.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let total = Int(header.cmsg_len)
            guard total >= headerSize, offset + total <= end else { break }
            if header.cmsg_level == SOL_SOCKET && header.cmsg_type == rights {
                let count = (total - headerSize) / MemoryLayout<CInt>.size
                for index in 0..<count {
                    found.append(Descriptor(rawValue: control.loadUnaligned(
                        fromByteOffset: offset + headerSize + index * MemoryLayout<CInt>.size, as: CInt.self)))
                }
            }
            offset += aligned(total)
        }
        return found
    }
}

extension DescriptorPassing {
    /// Where received descriptors that may not be memory files are closed: off the receive thread, since
    /// closing a file can wait for whoever serves it (a FUSE daemon's flush, a TCP socket lingering on unsent
    /// data), and a hostile sender could otherwise stall the listener. One at a time: while one close waits,
    /// the others wait behind it, holding their descriptors, at most ``Limits/maximumPendingCloses`` of them.
    private static let closer = DispatchQueue(label: "Wormhole received descriptors")
    private static let pendingCloses = Atomic<Int>(0)

    /// Closes a descriptor a message carried without waiting on the file where it can: a memory file (which
    /// `F_GET_SEALS` tells without calling on any file system) at once, anything else on ``closer``, unless
    /// ``Limits/maximumPendingCloses`` already wait there.
    package static func closeReceived(_ fd: Descriptor) {
        if isMemoryFile(fd.rawValue) {
            fd.close()
            return
        }
        guard pendingCloses.add(1, ordering: .relaxed).newValue <= Limits.maximumPendingCloses else {
            pendingCloses.subtract(1, ordering: .relaxed)
            fd.close()
            return
        }
        closer.async {
            fd.close()
            pendingCloses.subtract(1, ordering: .relaxed)
        }
    }

    /// Returns once every descriptor handed to ``closeReceived(_:)`` before is closed (for tests).
    static func waitForClosing() {
        closer.sync {}
    }
}
