// Calls glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not define: `recvmmsg(2)` and
// `memfd_create(2)`, looked up once by name, and the file-sealing constants. Linux only; elsewhere the callers
// take their portable way (one `recv` a message; large frames through the spool).
#if canImport(Glibc)
import Glibc

enum LinuxCalls {
    /// `struct mmsghdr`: a message header and the length received into it. Swift lays it out as C does
    /// (56 + 4 bytes, a stride of 64).
    struct MessageVectorEntry {
        var header = msghdr()
        var length: CUnsignedInt = 0
    }

    /// `MSG_CMSG_CLOEXEC`: descriptors received in a control message are close-on-exec from the start.
    static let receiveCloseOnExec: CInt = 0x4000_0000
    /// `MFD_CLOEXEC | MFD_ALLOW_SEALING`, and `MFD_NOEXEC_SEAL` where the kernel knows it (6.3 and later, which
    /// may refuse memory files without it); older kernels refuse that flag, and get the others alone.
    static let memoryFileFlags: CUnsignedInt = 0x1 | 0x2
    static let noExecutableFlag: CUnsignedInt = 0x8
    /// `F_ADD_SEALS`, `F_GET_SEALS` and the seals a shared payload carries: no shrinking, growing or writing,
    /// and no changing the seals.
    static let addSeals: CInt = 1033
    static let getSeals: CInt = 1034
    static let sealSeal: CInt = 0x1
    static let sealShrink: CInt = 0x2
    static let sealGrow: CInt = 0x4
    static let sealWrite: CInt = 0x8
    static let sealFutureWrite: CInt = 0x10
    static let payloadSeals: CInt = sealSeal | sealShrink | sealGrow | sealWrite
    /// The seals of a file that keeps its size but may be written: no shrinking or growing, and no new seals.
    static let sizeSeals: CInt = sealSeal | sealShrink | sealGrow

    private typealias ReceiveMessages = @convention(c) (
        CInt, UnsafeMutableRawPointer?, CUnsignedInt, CInt, UnsafeMutablePointer<timespec>?
    ) -> CInt
    private typealias MakeMemoryFile = @convention(c) (UnsafePointer<CChar>, CUnsignedInt) -> CInt

    // Both are in every glibc since 2.27; nil only on a C library without them.
    private static let receiveMessages: ReceiveMessages? = lookUp("recvmmsg")
    private static let makeMemoryFile: MakeMemoryFile? = lookUp("memfd_create")

    private static func lookUp<Function>(_ name: String) -> Function? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }

    static var canReceiveMessages: Bool { receiveMessages != nil }
    static var canMakeMemoryFiles: Bool { makeMemoryFile != nil }

    /// `recvmmsg(2)` without blocking: fills up to `vector.count` entries; returns how many, or nil when
    /// nothing is waiting. With `waiting`, waits for the first (`MSG_WAITFORONE`) as long as the socket's
    /// receive timeout allows.
    static func receiveMessages(
        _ fd: CInt, _ vector: UnsafeMutableBufferPointer<MessageVectorEntry>, flags: CInt, waiting: Bool = false
    ) throws(WormholeError) -> Int? {
        guard let receiveMessages else { throw WormholeError(.system, "recvmmsg is not available", errno: ENOSYS) }
        let received = try valueOrNothing("recvmmsg") {
            receiveMessages(
                fd, UnsafeMutableRawPointer(vector.baseAddress), CUnsignedInt(vector.count), flags | CInt(waiting ? MSG_WAITFORONE : MSG_DONTWAIT), nil)
        }
        return received.map(Int.init)
    }

    /// `memfd_create(2)`: an anonymous, close-on-exec file in memory that can be sealed.
    static func makeMemoryFile(_ name: String) throws(WormholeError) -> OwnedDescriptor {
        guard let makeMemoryFile else { throw WormholeError(.system, "memfd_create is not available", errno: ENOSYS) }
        try InjectedFault.failMemoryFile()
        do throws(WormholeError) {
            let fd = try valueOrErrno("memfd_create") {
                name.withCString { makeMemoryFile($0, memoryFileFlags | noExecutableFlag) }
            }
            return OwnedDescriptor(rawValue: fd)
        } catch where error.errno == EINVAL {
            let fd = try valueOrErrno("memfd_create") { name.withCString { makeMemoryFile($0, memoryFileFlags) } }
            return OwnedDescriptor(rawValue: fd)
        }
    }

    /// `SIOCOUTQ` of an AF_UNIX socket: the bytes it sent that its peer has not read yet; nil if unknown.
    static func unreadBytes(_ fd: CInt) -> Int? {
        var count: CInt = 0
        guard ioctl(fd, UInt(TIOCOUTQ), &count) == 0 else { return nil }
        return Int(count)
    }

    static func addSeals(_ fd: CInt, _ seals: CInt) throws(WormholeError) {
        _ = try valueOrErrno("fcntl F_ADD_SEALS") { fcntl(fd, addSeals, seals) }
    }

    /// The seals of `fd`; throws `EINVAL` for a file that is not a memory file.
    static func seals(of fd: CInt) throws(WormholeError) -> CInt {
        try valueOrErrno("fcntl F_GET_SEALS") { fcntl(fd, getSeals) }
    }
}
#endif
