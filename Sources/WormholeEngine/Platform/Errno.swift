#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An errno value, named for what it tells the library. ``WormholeError/errno`` keeps the raw value the system
/// gave; the layers above `Platform/` compare it with these names (``WormholeError/systemErrno``), never with
/// the C library's constants, so that what each value means is said once, here.
package struct Errno: Hashable, Sendable {
    let rawValue: CInt

    init(_ rawValue: CInt) { self.rawValue = rawValue }

    /// What the system says the value means (`strerror(3)`), e.g. "Permission denied".
    var message: String { String(cString: strerror(rawValue)) }

    /// No such file or folder (`ENOENT`): gone, or never made.
    package static let noSuchFile = Errno(ENOENT)
    /// The name is taken (`EEXIST`).
    package static let fileExists = Errno(EEXIST)
    /// A folder renamed over holds files (`ENOTEMPTY`; some systems say `EEXIST`).
    package static let directoryNotEmpty = Errno(ENOTEMPTY)
    /// A part of the path is not a folder (`ENOTDIR`).
    static let notDirectory = Errno(ENOTDIR)
    /// A symbolic link where `O_NOFOLLOW` refuses one (`ELOOP`).
    static let symbolicLink = Errno(ELOOP)
    /// A call the system does not have (`ENOSYS`).
    static let notImplemented = Errno(ENOSYS)
    /// Interrupted by a signal before it did anything (`EINTR`).
    package static let interrupted = Errno(EINTR)
    /// Nothing now, try later (`EAGAIN`; `EWOULDBLOCK` is the same value on Linux and Darwin).
    package static let wouldBlock = Errno(EAGAIN)
    /// A non-blocking connect goes on in the background (TCP).
    package static let inProgress = Errno(EINPROGRESS)
    /// The peer of a connection reset it (`ECONNRESET`).
    static let connectionReset = Errno(ECONNRESET)
    /// A pending connection was given up by its peer before it was accepted (`ECONNABORTED`).
    static let connectionAborted = Errno(ECONNABORTED)
    /// Out of memory (`ENOMEM`).
    static let outOfMemory = Errno(ENOMEM)
    /// The file system is full (`ENOSPC`), or this user's quota on it is (`EDQUOT`).
    static let outOfSpace: Set<Errno> = [Errno(ENOSPC), Errno(EDQUOT)]

    /// Whether only a bug of this library can cause the value: a descriptor that is not open (`EBADF`) or not a
    /// socket (`ENOTSOCK`), a bad address (`EFAULT`).
    var isBug: Bool { self == Errno(EBADF) || self == Errno(ENOTSOCK) || self == Errno(EFAULT) }

    /// This process, or the system, ran out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`):
    /// a statement about this process's means, not about the file or the peer it was working on.
    package static let outOfResources: Set<Errno> = [Errno(EMFILE), Errno(ENFILE), Errno(ENOBUFS), Errno(ENOMEM)]
}

extension WormholeError {
    /// The errno a failed system call reported, named; nil for an error that is not the system's.
    package var systemErrno: Errno? { errno.map(Errno.init) }

    /// Whether a system call failed because this process, or the system, is out of descriptors or memory
    /// (``Errno/outOfResources``): nothing is known then about the file or the peer it was working on.
    package var isOutOfResources: Bool { systemErrno.map(Errno.outOfResources.contains) ?? false }

    /// Whether a write failed because the file system, or this user's quota on it, is full (``Errno/outOfSpace``).
    package var isOutOfSpace: Bool { systemErrno.map(Errno.outOfSpace.contains) ?? false }

    /// An error of a system call that failed with `errno`.
    init(_ code: Code, _ detail: String, errno: Errno) {
        self.init(code, detail, errno: errno.rawValue)
    }
}
