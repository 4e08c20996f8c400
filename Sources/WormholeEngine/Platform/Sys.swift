// The one place that calls the C library: one shim per call, and one policy for what a failed call's errno
// means, said here once.
// - EINTR (a signal came before the call did anything) is retried, by `valueOrErrno` and `valueOrNothing`;
//   never for close(2), which has released the descriptor whatever it returns.
// - EAGAIN (EWOULDBLOCK is the same value on Linux and Darwin) from a non-blocking call is "nothing now":
//   `valueOrNothing` returns nil, and its callers wait for the next poll.
// - Errnos that only a bug of this library can cause (EBADF, EFAULT, ENOTSOCK: a descriptor closed twice or a
//   bad buffer) are surfaced like any other failure, and said (`Errno.isBug`), at most once a second: never a
//   trap, since a descriptor another process sends can be anything.
// - Every other errno becomes a ``WormholeError`` that carries it; what it says about a peer is PeerState's to
//   tell, and the layers above compare it by Errno's names only.
// What Linux and Apple platforms do differently is in Linux/Linux.swift and Darwin/Darwin.swift, each file under
// one #if; this file and the others here are compiled alike on both.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Runs `body` until it stops failing with `EINTR`; a `-1` result becomes a ``WormholeError`` naming `call`.
@inline(__always)
func valueOrErrno<R: FixedWidthInteger>(
    _ call: @autoclosure () -> String,
    retryOnInterrupt: Bool = true,
    _ body: () -> R
) throws(WormholeError) -> R {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let error = Errno(currentErrno())
        if retryOnInterrupt && error == .interrupted { continue }
        throw failure(call(), error)
    }
}

/// ``valueOrErrno(_:retryOnInterrupt:_:)`` for a call on a non-blocking descriptor: nil when it would block
/// (`EAGAIN`), as nothing is there now.
@inline(__always)
func valueOrNothing<R: FixedWidthInteger>(_ call: @autoclosure () -> String, _ body: () -> R) throws(WormholeError) -> R? {
    while true {
        let result = body()
        guard result == -1 else { return result }
        let error = Errno(currentErrno())
        if error == .interrupted { continue }
        if error == .wouldBlock { return nil }
        throw failure(call(), error)
    }
}

/// The error of a failed call; one that only a bug can cause is said too, at most once a second, from another
/// thread: the caller may hold a lock that the application's log handler would wait for.
private func failure(_ call: String, _ error: Errno) -> WormholeError {
    if error.isBug, bugReport.isDue() {
        let message = "\(call) failed: \(error.message) (errno \(error.rawValue)): a bug in Wormhole; please report it"
        DispatchQueue.global().async { Log.warning(message) }
    }
    return WormholeError(.system, call, errno: error)
}

private let bugReport = RepeatedWarning()

/// How ``Sys/open(_:_:mode:relativeTo:)`` opens a file: `open(2)`'s flags, named. Without ``writeOnly``, the
/// file opens for reading; every file opens close-on-exec.
package struct OpenOptions: OptionSet, Sendable {
    package let rawValue: CInt

    package init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    /// `O_WRONLY`.
    package static let writeOnly = OpenOptions(rawValue: O_WRONLY)
    /// `O_CREAT`: made, with the mode given, when missing.
    package static let create = OpenOptions(rawValue: O_CREAT)
    /// `O_EXCL`: with ``create``, fails (`EEXIST`) when anything is there already, a link included.
    package static let exclusive = OpenOptions(rawValue: O_EXCL)
    /// `O_NOFOLLOW`: a symbolic link at the name fails (`ELOOP`) rather than be followed.
    package static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
    /// `O_NONBLOCK`: a FIFO opens at once (or fails, for writing) rather than wait for its other end.
    package static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
    /// `O_DIRECTORY`: anything but a folder fails (`ENOTDIR`).
    package static let directory = OpenOptions(rawValue: O_DIRECTORY)
}

package enum Sys {
    package static func open(_ path: String, _ options: OpenOptions = [], mode: UInt16 = 0o600, relativeTo directory: Descriptor = .currentDirectory)
        throws(WormholeError) -> OwnedDescriptor
    {
        // Through `withCString`, which hands over a native string's own bytes, which end in a zero already: passed
        // as it is, a String is copied into an array of its own for every call. Here and in `status`, which a post
        // may call; the calls that change files are rare enough to take the copy.
        let fd = try valueOrErrno("open \(path)") {
            path.withCString { openat(directory.rawValue, $0, options.rawValue | O_CLOEXEC, mode_t(mode)) }
        }
        return OwnedDescriptor(rawValue: fd)
    }

    static func close(_ fd: CInt) {
        // EINTR on close must not be retried on Linux: the descriptor is already released.
        _ = libcClose(fd)
    }

    /// `count` bytes from `malloc(3)` (aligned as it aligns: 16 bytes on 64-bit platforms), given back with
    /// ``deallocate(_:)``; nil when there is no memory. Swift's own allocation of raw memory asks
    /// `posix_memalign` on Linux, at about twice the cost.
    package static func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer? {
        guard !InjectedFault.allocationFails, let memory = malloc(max(count, 1)) else { return nil }
        return UnsafeMutableRawBufferPointer(start: memory, count: count)
    }

    /// Gives back memory from ``allocate(_:)``.
    package static func deallocate(_ memory: UnsafeMutableRawBufferPointer) {
        libcFree(memory.baseAddress)
    }

    static func readSome(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer) throws(WormholeError) -> Int {
        try valueOrErrno("read") { libcRead(fd, buffer.baseAddress, buffer.count) }
    }

    /// Writes all of `bytes` at `offset`, looping on short writes.
    static func pwriteAll(_ fd: CInt, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WormholeError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno("pwrite") { pwrite(fd, base + done, bytes.count - done, off_t(offset + done)) }
        }
    }

    /// Reads exactly `count` bytes at `offset`, or fewer when the file ends first.
    static func preadAll(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer, at offset: Int)
        throws(WormholeError) -> Int
    {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = try valueOrErrno("pread") { pread(fd, base + done, buffer.count - done, off_t(offset + done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    static func status(of fd: CInt) throws(WormholeError) -> FileStatus {
        var info = SystemStatus()
        _ = try valueOrErrno("fstat") { fstat(fd, &info) }
        return FileStatus(info)
    }

    package static func status(_ path: String, relativeTo directory: Descriptor = .currentDirectory, followLinks: Bool = true)
        throws(WormholeError) -> FileStatus
    {
        var info = SystemStatus()
        let flags = followLinks ? 0 : AT_SYMLINK_NOFOLLOW
        _ = try valueOrErrno("stat \(path)") { path.withCString { fstatat(directory.rawValue, $0, &info, flags) } }
        return FileStatus(info)
    }

    static func truncate(_ fd: CInt, _ size: Int) throws(WormholeError) {
        _ = try valueOrErrno("ftruncate") { ftruncate(fd, off_t(size)) }
    }

    static func changeMode(of fd: CInt, _ mode: UInt16) throws(WormholeError) {
        _ = try valueOrErrno("fchmod") { fchmod(fd, mode_t(mode)) }
    }

    static func changeMode(_ path: String, _ mode: UInt16, relativeTo directory: Descriptor = .currentDirectory) throws(WormholeError) {
        _ = try valueOrErrno("chmod \(path)") { fchmodat(directory.rawValue, path, mode_t(mode), 0) }
    }

    static func makeDirectory(_ path: String, _ mode: UInt16, relativeTo directory: Descriptor = .currentDirectory) throws(WormholeError) {
        _ = try valueOrErrno("mkdir \(path)") { mkdirat(directory.rawValue, path, mode_t(mode)) }
    }

    package static func renameFile(_ from: String, _ to: String, in directory: Descriptor) throws(WormholeError) {
        _ = try valueOrErrno("rename \(from) to \(to)") { renameat(directory.rawValue, from, directory.rawValue, to) }
    }

    package static func removeFile(_ path: String, relativeTo directory: Descriptor = .currentDirectory) throws(WormholeError) {
        _ = try valueOrErrno("unlink \(path)") { unlinkat(directory.rawValue, path, 0) }
    }

    /// `link(2)` within one directory: creates `to` only if nothing is there (`EEXIST` otherwise).
    package static func link(_ from: String, _ to: String, in directory: Descriptor) throws(WormholeError) {
        _ = try valueOrErrno("link \(from) to \(to)") { linkat(directory.rawValue, from, directory.rawValue, to, 0) }
    }

    package static func removeDirectory(_ path: String, relativeTo directory: Descriptor) throws(WormholeError) {
        _ = try valueOrErrno("rmdir \(path)") { unlinkat(directory.rawValue, path, AT_REMOVEDIR) }
    }

    /// The names in the directory open as `directory`, less `.` and `..`; at most `limit` of them.
    package static func listDirectory(_ directory: Descriptor, limit: Int = Limits.maximumListedNames) throws(WormholeError) -> [String] {
        // fdopendir takes the descriptor over, so it gets one of its own: opened anew, not dup(2)ed, because a
        // duplicate shares the directory's read offset, and two threads listing one folder at once would each
        // see part of it, or nothing.
        let copy = try valueOrErrno("openat") { openat(directory.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard let stream = fdopendir(copy) else {
            let error = currentErrno()
            close(copy)
            throw WormholeError(.system, "fdopendir", errno: error)
        }
        defer { closedir(stream) }
        // A record holds only as much of `d_name` as its name needs (`d_reclen`), so the name is read where it is,
        // up to its terminating NUL, never copied as the whole declared array: the last record of a buffer may
        // end before it.
        guard let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { return [] }
        var names: [String] = []
        while names.count < limit, let entry = readdir(stream) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A non-blocking, close-on-exec pipe. Where the system can say so, a write with no reader fails with EPIPE
    /// instead of raising SIGPIPE (``keepFromSignalling(pipe:)``); elsewhere its write end closes first.
    package static func makePipe() throws(WormholeError) -> PipeEnds {
        var fds: [CInt] = [-1, -1]
        _ = try valueOrErrno("pipe") { pipe(&fds) }
        let made = PipeEnds(read: fds[0], write: fds[1])
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        keepFromSignalling(pipe: made.write.rawValue)
        return made
    }

    static func writeSome(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) throws(WormholeError) -> Int {
        try valueOrErrno("write") { libcWrite(fd, bytes.baseAddress, bytes.count) }
    }

    package static var processID: Int32 { getpid() }

    /// Nanoseconds since an arbitrary start, never going back (`CLOCK_MONOTONIC`).
    package static var uptimeNanoseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// `path` with every symbolic link, `.` and `..` resolved, or nil when it cannot be (`realpath(3)`).
    package static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { libcFree(resolved) }
        return String(cString: resolved)
    }

    /// Throws unless this process may create files in the folder open as `directory` (`faccessat(2)`).
    static func checkWriteAndSearch(_ directory: Descriptor) throws(WormholeError) {
        _ = try valueOrErrno("faccessat") { faccessat(directory.rawValue, ".", W_OK | X_OK, 0) }
    }

    /// Sleeps the calling thread for `nanoseconds` (less if a signal interrupts it).
    package static func sleep(nanoseconds: UInt64) {
        var pause = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        nanosleep(&pause, nil)
    }
    package static var effectiveUserID: UInt32 { geteuid() }
}


private func libcClose(_ fd: CInt) -> CInt { close(fd) }
private func libcFree(_ memory: UnsafeMutableRawPointer?) { free(memory) }
private func libcRead(_ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func libcWrite(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }

/// The wall clock, in nanoseconds since 1970: what file times are measured in.
package func wallClockNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return nanoseconds(Int64(now.tv_sec), Int64(now.tv_nsec))
}

/// How long ago `time` (wall-clock nanoseconds, as a file's) was: negative for the future, held at the ends of
/// `Int64` rather than trapping.
package func nanosecondsSince(_ time: Int64) -> Int64 {
    let (age, overflow) = wallClockNanoseconds().subtractingReportingOverflow(time)
    return overflow ? (time < 0 ? .max : .min) : age
}

/// Seconds and nanoseconds as nanoseconds, held at the ends of `Int64` rather than trapping.
func nanoseconds(_ seconds: Int64, _ nanoseconds: Int64) -> Int64 {
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    let (sum, overflowed) = scaled.addingReportingOverflow(nanoseconds)
    if overflowed { return nanoseconds < 0 ? .min : .max }
    return sum
}
