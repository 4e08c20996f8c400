// What Linux does its own way, in one file. Every declaration here has its namesake for Apple platforms in
// Darwin/Darwin.swift, and the shared code calls them without asking which system it runs on. The calls glibc
// hides from Swift (recvmmsg, memfd_create) are in LinuxCalls.swift beside this file.
#if canImport(Glibc)
import Glibc

// MARK: - Calls and files

/// The errno of the calling thread's last failed call.
@inline(__always)
func currentErrno() -> CInt { Glibc.errno }

/// The C library's `struct stat`, which ``FileStatus`` reads.
typealias SystemStatus = Glibc.stat

/// Runs `body`: without Objective-C there is no autorelease pool to drain.
@inline(__always)
package func withAutoreleasePool<Result>(_ body: () -> Result) -> Result { body() }

extension FileStatus {
    /// The last modification time, as `stat(2)` gives it: seconds and nanoseconds since 1970.
    var modifiedTime: (seconds: Int64, nanoseconds: Int64) {
        (Int64(system.st_mtim.tv_sec), Int64(system.st_mtim.tv_nsec))
    }
}

extension Limits {
    /// The soft limit of open files a process gets by default: 1,024. The platform says it, and
    /// ``Limits/maximumLinks`` is worked out from it.
    static let defaultOpenFileLimit = 1024
}

extension Sys {
    /// `shutdown(2)` with `SHUT_RD`: a peer's later sends fail (`EPIPE`) while what it sent before stays
    /// readable. Returns false when it failed.
    @discardableResult
    package static func shutdownReading(_ socket: Descriptor) -> Bool {
        Glibc.shutdown(socket.rawValue, CInt(SHUT_RD)) == 0
    }

    /// Nothing to set: a write to a pipe with no reader raises SIGPIPE here, so the write end closes first.
    static func keepFromSignalling(pipe fd: CInt) {}

    /// Nothing to set: Linux has no data protection classes.
    static func keepReadableWhileLocked(_ path: String) {}

    /// Linux has no App Group containers: the default container is found by environment variables.
    static let hasAppGroupContainers = false
    static func appGroupContainerPath(_ group: String) -> String? { nil }

    /// Whether ``processState(_:)`` tells a stopped process from a running one: from `/proc`, yes.
    static let tellsStoppedProcesses = true

    /// What the system says of another process, from `/proc/<pid>/stat`; without it (no `/proc`), whether
    /// `kill(pid, 0)` finds it (`ESRCH`: gone).
    static func processState(_ pid: Int32) -> ProcessState {
        guard let fields = processStatFields(pid) else {
            return kill(pid, 0) != 0 && currentErrno() == ESRCH ? .gone : .unknown
        }
        switch fields.first?.first {
        case UInt8(ascii: "T"), UInt8(ascii: "t"): return .stopped
        // A process whose main thread exited (pthread_exit) while others run shows as a zombie: it lives while
        // it has more than that thread (`num_threads`, the 20th field).
        case UInt8(ascii: "Z"):
            let threads = fields.count > 17 ? Int(String(decoding: fields[17], as: UTF8.self)) ?? 0 : 0
            return threads > 1 ? .running : .gone
        case UInt8(ascii: "X"): return .gone
        case nil: return .unknown
        default: return .running
        }
    }

    /// When `pid` started, in clock ticks since boot (`/proc/<pid>/stat`'s 22nd field); nil when unknown.
    static func processStart(_ pid: Int32) -> UInt64? {
        guard let fields = processStatFields(pid), fields.count > 19 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }

    /// This process: its pid, its start (``processStart(_:)``) and its pid namespace (the inode `stat(2)` gives
    /// for `/proc/self/ns/pid`), 0 for what `/proc` does not tell.
    static func currentProcessMark() -> ProcessMark {
        let pid = getpid()
        let namespace = (try? status("/proc/self/ns/pid"))?.identity.inode ?? 0
        return ProcessMark(pid: pid, start: processStart(pid) ?? 0, namespace: namespace)
    }

    /// The fields of `/proc/<pid>/stat` after the command name (the state first), which is in parentheses and
    /// may itself hold spaces and parentheses; nil when the file cannot be read.
    private static func processStatFields(_ pid: Int32) -> [ArraySlice<UInt8>]? {
        guard let stat = try? readSmallFile("/proc/\(pid)/stat", limit: 4096),
            let close = stat.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        return stat[(close + 1)...].split(separator: UInt8(ascii: " ")).map { $0 }
    }
}

// MARK: - Sockets

extension SocketKind {
    /// Sequenced packets: a connection per poster, whose buffer is charged to its sender.
    package static let platformDefault = SocketKind.sequencedPacket
}

extension UnixSocket {
    /// Flags given to `socket(2)`: close-on-exec from the start.
    static let socketFlags = CInt(SOCK_CLOEXEC.rawValue)
    /// Flags for every send: never block, and never raise SIGPIPE.
    static let sendFlags = CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL)
    /// Flags for every receive: never block, say a message's real length when it was cut, and make the
    /// descriptors it carried close-on-exec from the start.
    static let receiveFlags = CInt(MSG_DONTWAIT) | CInt(MSG_TRUNC) | LinuxCalls.receiveCloseOnExec
    /// The same for a receive that waits (``receiveMessage(_:_:waiting:)``).
    static let waitingReceiveFlags = CInt(MSG_TRUNC) | LinuxCalls.receiveCloseOnExec

    /// The socket type of `transport`.
    static func type(of transport: SocketKind) -> CInt {
        switch transport {
        case .sequencedPacket: CInt(SOCK_SEQPACKET.rawValue)
        case .datagram: CInt(SOCK_DGRAM.rawValue)
        }
    }

    /// The bytes `fd` sent that its peer has not read yet (`SIOCOUTQ`); nil when unknown.
    package static func unreadBytes(_ socket: Descriptor) -> Int? { LinuxCalls.unreadBytes(socket.rawValue) }
}

extension TCPSocket {
    /// A stream socket's type, and the flags given with it to `socket(2)`: close-on-exec from the start.
    static let streamType = CInt(SOCK_STREAM.rawValue)
    static let socketFlags = CInt(SOCK_CLOEXEC.rawValue)
    /// Flags for every send: never raise SIGPIPE.
    static let sendFlags = CInt(MSG_NOSIGNAL)
    static let noDelayLevel = CInt(IPPROTO_TCP)

    /// Nothing to set: SOCK_CLOEXEC was given to socket(), MSG_NOSIGNAL goes with each send.
    static func prepare(_ fd: CInt) throws(WormholeError) {}

    static func shutdownBoth(_ fd: CInt) -> CInt { Glibc.shutdown(fd, CInt(SHUT_RDWR)) }
}

extension SocketOptions {
    /// `shutdown(SHUT_RD)`: posters' sends fail with EPIPE from then on.
    package static func sealDatagramSocket(_ socket: Descriptor) -> Bool { Sys.shutdownReading(socket) }

    /// Sizes the send buffer of a new socket. SOCK_CLOEXEC was given to socket(), MSG_NOSIGNAL goes with each send.
    static func prepare(_ fd: CInt, for transport: SocketKind) throws(WormholeError) {
        switch transport {
        case .sequencedPacket: sizeSendBuffer(fd, asking: Limits.sequencedPacketSendBuffer, transport)
        case .datagram: sizeSendBuffer(fd, asking: CInt(datagramSendBuffer), transport)
        }
    }

    /// Nothing to set: a datagram receiver's queue is bounded by message count (`net.unix.max_dgram_qlen`), not
    /// by its buffer.
    static func prepareReceiving(_ fd: CInt, for transport: SocketKind) {}
}

extension SocketAddress {
    /// The longest socket path: what `sun_path` holds (a longer one is reached through ``reachablePath``).
    static var maximumPathLength: Int { UnixSocket.maximumPathLength }

    /// `path`, or for one too long for `sun_path` the same file through the open directory's descriptor
    /// (`/proc/self/fd/<n>/<name>`).
    static func reachablePath(_ path: String, directory: CInt, name: String) -> String {
        path.utf8.count > UnixSocket.maximumPathLength ? "/proc/self/fd/\(directory)/\(name)" : path
    }

    /// Linux's address has no length field.
    static func setLength(_ address: inout sockaddr_un, _ length: Int) {}
}

extension DescriptorPassing {
    /// What `CMSG_ALIGN` rounds to: `size_t`.
    static let alignment = MemoryLayout<Int>.size

    /// Whether `fd` is a memory file, which `F_GET_SEALS` tells without calling on any file system.
    static func isMemoryFile(_ fd: CInt) -> Bool { (try? LinuxCalls.seals(of: fd)) != nil }
}

// MARK: - Receiving several messages at once

/// `recvmmsg(2)`'s vector for a ``MessageBatch``: a header per slot, pointing at the slot's buffer and control
/// space, filled by one call.
final class MessageVector {
    let capacity: Int
    private let entries: UnsafeMutableBufferPointer<LinuxCalls.MessageVectorEntry>
    private let pieces: UnsafeMutableBufferPointer<iovec>

    /// Nil where the C library has no `recvmmsg`, or for a capacity of one.
    init?(capacity: Int) {
        guard LinuxCalls.canReceiveMessages, capacity > 1 else { return nil }
        self.capacity = capacity
        entries = .allocate(capacity: capacity)
        entries.initialize(repeating: LinuxCalls.MessageVectorEntry())
        pieces = .allocate(capacity: capacity)
        pieces.initialize(repeating: iovec())
    }

    deinit {
        entries.deallocate()
        pieces.deallocate()
    }

    /// Points slot i's header at `buffer(i)`, with room for descriptors at `control(i)`: once, since a receive
    /// writes back only the lengths and flags.
    func prepare(buffer: (Int) -> UnsafeMutableRawBufferPointer, control: (Int) -> UnsafeMutableRawPointer?) {
        for index in 0..<capacity {
            let slot = buffer(index)
            pieces[index] = iovec(iov_base: slot.baseAddress, iov_len: slot.count)
            var header = msghdr()
            header.msg_iov = pieces.baseAddress.map { $0 + index }
            header.msg_iovlen = 1
            header.msg_control = control(index)
            entries[index] = LinuxCalls.MessageVectorEntry(header: header, length: 0)
        }
    }

    /// Receives up to `slots` messages without blocking, into the slots ``prepare(buffer:control:)`` set, with
    /// room for `controlLength` bytes of descriptors each. Returns how many, or nil when nothing is waiting;
    /// a connection reset reads as one message of no bytes. With `waiting`, waits for the first as
    /// ``UnixSocket/receiveMessage(_:_:waiting:)`` does.
    func receive(_ fd: CInt, slots: Int, controlLength: Int, waiting: Bool = false) throws(WormholeError) -> Int? {
        // The one field a receive changes that it also reads.
        for index in 0..<slots { entries[index].header.msg_controllen = .init(controlLength) }
        do throws(WormholeError) {
            return try LinuxCalls.receiveMessages(
                fd, UnsafeMutableBufferPointer(rebasing: entries[0..<slots]), flags: CInt(MSG_TRUNC) | LinuxCalls.receiveCloseOnExec,
                waiting: waiting)
        } catch where error.systemErrno == .connectionReset {
            entries[0].length = 0
            entries[0].header.msg_controllen = 0
            entries[0].header.msg_flags = 0
            return 1
        }
    }

    /// What the last ``receive(_:slots:controlLength:waiting:)`` put in slot `index`: the message's real
    /// length, the length of its control data, and whether that was cut (`MSG_CTRUNC`).
    func received(_ index: Int) -> (length: Int, controlLength: Int, controlCut: Bool) {
        let entry = entries[index]
        return (Int(entry.length), Int(entry.header.msg_controllen), entry.header.msg_flags & CInt(MSG_CTRUNC) != 0)
    }
}

// MARK: - Sealed memory files

/// Anonymous files in memory, sealed so that nobody can change them once written (`memfd_create(2)`,
/// `F_ADD_SEALS`): how a frame too large for the socket reaches a listener without going through the disk.
package enum MemoryFile {
    /// Whether this process makes them (not while it takes the paths Apple platforms take).
    package static var isAvailable: Bool { LinuxCalls.canMakeMemoryFiles && !InjectedFault.takesApplePaths }

    /// A new memory file that `write` fills (given its descriptor), then sealed against writing, growing and
    /// shrinking.
    package static func sealed(_ write: (Descriptor) throws(WormholeError) -> Void) throws(WormholeError) -> OwnedDescriptor {
        let file = try LinuxCalls.makeMemoryFile("wormhole-frame")
        try write(file.descriptor)
        try LinuxCalls.addSeals(file.rawValue, LinuxCalls.payloadSeals)
        return file
    }

    /// A new memory file of `size` bytes, every page of it allocated, sealed against shrinking, growing and new
    /// seals but not against writing: a file written again and again (``FrameFile``) whose mappings can never
    /// lose a page.
    package static func fixedSize(_ size: Int) throws(WormholeError) -> OwnedDescriptor {
        let file = try LinuxCalls.makeMemoryFile("wormhole-frames")
        var failure = EINTR
        // Allocating stops at a signal; a few tries, then the caller's other way.
        for _ in 0..<4 where failure == EINTR { failure = posix_fallocate(file.rawValue, 0, off_t(size)) }
        guard failure == 0 else {
            throw WormholeError(.system, "posix_fallocate of a \(size)-byte memory file", errno: failure)
        }
        try LinuxCalls.addSeals(file.rawValue, LinuxCalls.sizeSeals)
        return file
    }

    /// Throws ``WormholeError/Code/corruptData`` unless `fd` is a memory file sealed against growing and
    /// shrinking, so that a mapping of it never faults, and that this process can write through `fd` (open for
    /// reading and writing, with no seal against writing). `F_GET_SEALS` answers within the kernel, as for
    /// ``checkSealed(_:)``.
    package static func checkFixedSize(_ file: Descriptor) throws(WormholeError) {
        let fd = file.rawValue
        let seals = try memoryFileSeals(fd, of: "frame file")
        guard seals & LinuxCalls.sizeSeals == LinuxCalls.sizeSeals else {
            throw WormholeError(.corruptData, "frame file is not sealed against resizing")
        }
        guard seals & (LinuxCalls.sealWrite | LinuxCalls.sealFutureWrite) == 0, fcntl(fd, F_GETFL) & O_ACCMODE == O_RDWR else {
            throw WormholeError(.corruptData, "frame file cannot be written through its descriptor")
        }
    }

    /// Throws ``WormholeError/Code/corruptData`` unless `fd` is a memory file sealed against writing, growing and
    /// shrinking. `F_GET_SEALS` answers within the kernel and fails for anything but a memory file, so a
    /// descriptor of a file whose server could stall a call (FUSE) is refused before any call reaches it; only a
    /// memfd made to be sealed can carry these seals.
    package static func checkSealed(_ file: Descriptor) throws(WormholeError) {
        let seals = try memoryFileSeals(file.rawValue, of: "shared frame")
        guard seals & LinuxCalls.payloadSeals == LinuxCalls.payloadSeals else {
            throw WormholeError(.corruptData, "shared frame's file is not sealed against writing and resizing")
        }
    }

    /// The seals of `fd`, a memory file sent as `what`.
    /// - Throws: ``WormholeError/Code/corruptData`` for anything but a memory file that can carry seals.
    private static func memoryFileSeals(_ fd: CInt, of what: String) throws(WormholeError) -> CInt {
        do throws(WormholeError) {
            return try LinuxCalls.seals(of: fd)
        } catch {
            throw WormholeError(.corruptData, "\(what)'s descriptor is not a sealable memory file: \(error)")
        }
    }
}

/// Starts `operation` on the calling thread, which runs it to its first suspension (`Task.immediate`): work that
/// must not wait for a free thread of Swift's cooperative pool.
package func startTaskHere(_ operation: @escaping @Sendable @isolated(any) () async -> Void) {
    Task.immediate(operation: operation)
}
#endif
