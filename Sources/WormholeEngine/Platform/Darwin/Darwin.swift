// What Apple platforms do their own way, in one file. Every declaration here has its namesake for Linux in
// Linux/Linux.swift, and the shared code calls them without asking which system it runs on. Written from Apple's
// documentation and the xnu sources (bsd/kern/uipc_socket.c, uipc_usrreq.c); this Linux machine type-checks it
// against Apple's SDKs but cannot run it.
#if canImport(Darwin)
import Darwin
import Foundation
import ObjectiveC

// MARK: - Calls and files

/// The errno of the calling thread's last failed call.
@inline(__always)
func currentErrno() -> CInt { Darwin.errno }

/// The C library's `struct stat`, which ``FileStatus`` reads.
typealias SystemStatus = Darwin.stat

/// Runs `body` in an autorelease pool of its own. Objects that Foundation autoreleases on a thread are freed only
/// when that thread's pool drains, and a receive thread that runs for the process's life would drain only at its
/// end: so each of its rounds, and each batch of deliveries, drains its own.
@inline(__always)
package func withAutoreleasePool<Result>(_ body: () -> Result) -> Result {
    autoreleasepool(invoking: body)
}

extension FileStatus {
    /// The last modification time, as `stat(2)` gives it: seconds and nanoseconds since 1970.
    var modifiedTime: (seconds: Int64, nanoseconds: Int64) {
        (Int64(system.st_mtimespec.tv_sec), Int64(system.st_mtimespec.tv_nsec))
    }
}

extension Limits {
    /// The soft limit of open files a process gets by default: 256. The platform says it, and
    /// ``Limits/maximumLinks`` is worked out from it.
    static let defaultOpenFileLimit = 256
}

extension Sys {
    /// `shutdown(2)` with `SHUT_RD`: a peer's later sends fail while what it sent before stays readable. Returns
    /// false when it failed (ENOTCONN for a socket that is not connected).
    @discardableResult
    static func shutdownReading(_ socket: Descriptor) -> Bool {
        Darwin.shutdown(socket.rawValue, SHUT_RD) == 0
    }

    /// A write to the pipe with no reader fails with EPIPE instead of raising SIGPIPE (`F_SETNOSIGPIPE`).
    static func keepFromSignalling(pipe fd: CInt) {
        _ = fcntl(fd, F_SETNOSIGPIPE, 1)
    }

    /// Gives the folder at `path` the data protection class that keeps it readable while the device is locked.
    /// With the `complete` class, files become unreadable whenever the device locks, and an extension running in
    /// the background could no longer post or receive; `completeUntilFirstUserAuthentication` keeps them
    /// readable from the first unlock after boot on (before that, nothing protected is readable: opening a
    /// center fails with a system error, EPERM). Files and folders created in a folder take its class, so the
    /// container's folder is set before anything is made in it. macOS has no such classes.
    static func keepReadableWhileLocked(_ path: String) {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try? FileManager.default.setAttributes(
            [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: path)
        #endif
    }

    /// The default container lives in the App Group's container.
    static let hasAppGroupContainers = true

    /// The path of the App Group container of `group`, or nil when the process has no such entitlement.
    static func appGroupContainerPath(_ group: String) -> String? {
        FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)?.path
    }

    /// Whether ``processState(_:)`` tells a stopped process from a running one: no, a stopped one is running.
    static let tellsStoppedProcesses = false

    /// Whether another process exists (`kill(pid, 0)`); Darwin has no `/proc` to tell a stopped one. A sandboxed
    /// app asking about another app's process gets `EPERM`: unknown.
    static func processState(_ pid: Int32) -> ProcessState {
        if kill(pid, 0) == 0 { return .running }
        return currentErrno() == ESRCH ? .gone : .unknown
    }

    /// Not told: a sandboxed app gets no answer about another app's process, so a pid is all a lease carries here.
    static func processStart(_ pid: Int32) -> UInt64? { nil }

    /// This process: its pid; no start and no pid namespace (0).
    static func currentProcessMark() -> ProcessMark {
        ProcessMark(pid: getpid(), start: 0, namespace: 0)
    }
}

// MARK: - Sockets

extension SocketKind {
    /// Datagrams: Darwin's AF_UNIX has no sequenced packets.
    package static let platformDefault = SocketKind.datagram
}

extension UnixSocket {
    /// Darwin has no SOCK_CLOEXEC: close-on-exec is set per socket (``SocketOptions/prepare(_:for:)``).
    static let socketFlags: CInt = 0
    /// Flags for every send: never block. SIGPIPE is off per socket (`SO_NOSIGPIPE`), as MSG_NOSIGNAL exists only
    /// since macOS 11 and iOS 14.
    static let sendFlags = MSG_DONTWAIT
    /// Flags for every receive: never block. A cut message fills the buffer (no MSG_TRUNC length).
    static let receiveFlags = MSG_DONTWAIT
    /// The same for a receive that waits (``receiveMessage(_:_:waiting:)``).
    static let waitingReceiveFlags: CInt = 0

    /// The socket type of `transport`. Darwin's AF_UNIX has no SOCK_SEQPACKET: socket() fails with
    /// EPROTONOSUPPORT, a clear error.
    static func type(of transport: SocketKind) -> CInt {
        switch transport {
        case .sequencedPacket: SOCK_SEQPACKET
        case .datagram: SOCK_DGRAM
        }
    }

    /// Not known here: shared frames, which ask, are Linux's alone.
    static func unreadBytes(_ socket: Descriptor) -> Int? { nil }
}

extension TCPSocket {
    /// A stream socket's type; Darwin has no SOCK_CLOEXEC (``prepare(_:)`` sets it).
    static let streamType = SOCK_STREAM
    static let socketFlags: CInt = 0
    /// SIGPIPE is off per socket (``prepare(_:)``).
    static let sendFlags: CInt = 0
    static let noDelayLevel = IPPROTO_TCP

    /// Turns SIGPIPE off and close-on-exec on.
    /// - Throws: when SIGPIPE cannot be turned off.
    static func prepare(_ fd: CInt) throws(WormholeError) {
        var on: CInt = 1
        guard setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
            throw WormholeError(.system, "setsockopt SO_NOSIGPIPE", errno: currentErrno())
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func shutdownBoth(_ fd: CInt) -> CInt { Darwin.shutdown(fd, SHUT_RDWR) }
}

extension SocketOptions {
    /// The receive buffer of a datagram socket (4,096 bytes by default, `net.local.dgram.recvspace`) holds what
    /// posters sent until the listener reads it; a datagram that does not fit fails with ENOBUFS and is spooled.
    /// 1 MiB: eight of the largest frames, far under `kern.ipc.maxsockbuf` (8 MiB).
    static let datagramReceiveBuffer = 1 << 20
    private static let receiveBufferWarning = OnceWarning()

    /// Darwin refuses to shut down a socket that is not connected (ENOTCONN), so its receive buffer is shrunk to
    /// one byte instead: xnu checks each datagram against the receiver's free space under the receiver's lock
    /// (`sbappendaddr`), so every later one fails (ENOBUFS), and what the buffer already holds stays.
    static func sealDatagramSocket(_ socket: Descriptor) -> Bool { set(socket.rawValue, SO_RCVBUF, 1) }

    /// Turns SIGPIPE off and close-on-exec on for a new socket (Darwin has neither SOCK_CLOEXEC nor, before
    /// macOS 11 and iOS 14, MSG_NOSIGNAL), and sizes a datagram socket's send buffer, which bounds the largest
    /// datagram it sends (2,048 bytes by default, `net.local.dgram.maxdgram`).
    /// - Throws: when SIGPIPE cannot be turned off.
    static func prepare(_ fd: CInt, for transport: SocketKind) throws(WormholeError) {
        guard set(fd, SO_NOSIGPIPE, 1) else { throw WormholeError(.system, "setsockopt SO_NOSIGPIPE", errno: currentErrno()) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if transport == .datagram { sizeSendBuffer(fd, asking: CInt(datagramSendBuffer), transport) }
    }

    /// Sizes a datagram receiver's buffer (``datagramReceiveBuffer``); a smaller grant is said once.
    static func prepareReceiving(_ fd: CInt, for transport: SocketKind) {
        guard transport == .datagram else { return }
        _ = set(fd, SO_RCVBUF, CInt(datagramReceiveBuffer))
        let granted = get(fd, SO_RCVBUF) ?? 0
        if granted < datagramReceiveBuffer {
            receiveBufferWarning.once {
                "datagram receive buffer of \(granted) bytes granted, \(datagramReceiveBuffer) asked: posters spool sooner"
            }
        }
    }
}

extension SocketAddress {
    /// The longest socket path: the kernel takes an address longer than `sockaddr_un` when `sun_len` says so, up
    /// to `SOCK_MAXADDRLEN` (255 bytes; xnu `unp_bind`, `getsockaddr`). Darwin has neither `/proc` nor
    /// `bindat`/`connectat`.
    static var maximumPathLength: Int {
        Int(SOCK_MAXADDRLEN) - (MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2) - 1
    }

    /// `path` itself: an address may be as long as it needs (``maximumPathLength``).
    static func reachablePath(_ path: String, directory: CInt, name: String) -> String { path }

    /// The address's length, which the kernel reads to take a path longer than `sun_path`.
    static func setLength(_ address: inout sockaddr_un, _ length: Int) {
        address.sun_len = UInt8(truncatingIfNeeded: length)
    }
}

extension DescriptorPassing {
    /// What `CMSG_ALIGN` rounds to: 32 bits.
    static let alignment = MemoryLayout<UInt32>.size

    /// Darwin has no memory files that say so without asking the file's server: every received descriptor is
    /// closed off the receive thread.
    static func isMemoryFile(_ fd: CInt) -> Bool { false }
}

// MARK: - Receiving several messages at once

/// Darwin has no `recvmmsg(2)`: a ``MessageBatch`` receives one message at a time with `recvmsg(2)`, and there is
/// never a vector.
final class MessageVector {
    let capacity = 1

    init?(capacity: Int) { return nil }

    func prepare(buffer: (Int) -> UnsafeMutableRawBufferPointer, control: (Int) -> UnsafeMutableRawPointer?) {}

    func receive(_ fd: CInt, slots: Int, controlLength: Int, waiting: Bool = false) throws(WormholeError) -> Int? { nil }

    func received(_ index: Int) -> (length: Int, controlLength: Int, controlCut: Bool) { (0, 0, false) }
}

// MARK: - Sealed memory files

/// Darwin has no sealed memory files: frames too large for the socket go through the spool, and a shared frame
/// a sender forges is refused.
package enum MemoryFile {
    package static let isAvailable = false

    static func sealed(_ write: (Descriptor) throws(WormholeError) -> Void) throws(WormholeError) -> OwnedDescriptor {
        throw WormholeError(.system, "shared frames need memfd_create", errno: Errno.notImplemented)
    }

    static func checkSealed(_ file: Descriptor) throws(WormholeError) {
        throw WormholeError(.corruptData, "shared frames are not taken on this platform")
    }

    package static func fixedSize(_ size: Int) throws(WormholeError) -> OwnedDescriptor {
        throw WormholeError(.system, "frame files need memfd_create", errno: Errno.notImplemented)
    }

    static func checkFixedSize(_ file: Descriptor) throws(WormholeError) {
        throw WormholeError(.corruptData, "frame files are not taken on this platform")
    }
}

/// Starts `operation` as a task on Swift's cooperative pool. `Task.immediate`, which would run it on the calling
/// thread, is in Apple's SDKs from their 26 releases on, which cannot be checked here.
package func startTaskHere(_ operation: @escaping @Sendable @isolated(any) () async -> Void) {
    Task(operation: operation)
}
#endif
