// The one place that calls libc. Every shim retries EINTR and turns -1 into a WormholeError carrying errno.
// Apple-platform branches are written from the documentation; this Linux machine cannot compile them.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        let error = currentErrno()
        if retryOnInterrupt && error == EINTR { continue }
        throw WormholeError(.system, call(), errno: error)
    }
}

@inline(__always)
func currentErrno() -> CInt {
    #if canImport(Glibc)
    return Glibc.errno
    #else
    return Darwin.errno
    #endif
}

enum Sys {
    static let cloexec: CInt = {
        #if canImport(Glibc)
        return CInt(SOCK_CLOEXEC.rawValue)
        #else
        return 0
        #endif
    }()

    /// Flags for every send: never block, and never raise SIGPIPE (Darwin sets SO_NOSIGPIPE per socket instead).
    static let sendFlags: CInt = {
        #if canImport(Glibc)
        return CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL)
        #else
        return MSG_DONTWAIT
        #endif
    }()

    static func open(_ path: String, _ flags: CInt, mode: mode_t = 0o600, relativeTo directory: CInt = AT_FDCWD)
        throws(WormholeError) -> OwnedDescriptor
    {
        let fd = try valueOrErrno("open \(path)") { openat(directory, path, flags | O_CLOEXEC, mode) }
        return OwnedDescriptor(rawValue: fd)
    }

    static func close(_ fd: CInt) {
        // EINTR on close must not be retried on Linux: the descriptor is already released.
        _ = libcClose(fd)
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
        var info = FileStatus()
        _ = try valueOrErrno("fstat") { fstat(fd, &info) }
        return info
    }

    static func status(_ path: String, relativeTo directory: CInt = AT_FDCWD, followLinks: Bool = true)
        throws(WormholeError) -> FileStatus
    {
        var info = FileStatus()
        let flags = followLinks ? 0 : AT_SYMLINK_NOFOLLOW
        _ = try valueOrErrno("stat \(path)") { fstatat(directory, path, &info, flags) }
        return info
    }

    static func truncate(_ fd: CInt, _ size: Int) throws(WormholeError) {
        _ = try valueOrErrno("ftruncate") { ftruncate(fd, off_t(size)) }
    }

    static func changeMode(of fd: CInt, _ mode: mode_t) throws(WormholeError) {
        _ = try valueOrErrno("fchmod") { fchmod(fd, mode) }
    }

    static func changeMode(_ path: String, _ mode: mode_t, relativeTo directory: CInt = AT_FDCWD) throws(WormholeError) {
        _ = try valueOrErrno("chmod \(path)") { fchmodat(directory, path, mode, 0) }
    }

    static func makeDirectory(_ path: String, _ mode: mode_t, relativeTo directory: CInt = AT_FDCWD) throws(WormholeError) {
        _ = try valueOrErrno("mkdir \(path)") { mkdirat(directory, path, mode) }
    }

    static func renameFile(_ from: String, _ to: String, in directory: CInt) throws(WormholeError) {
        _ = try valueOrErrno("rename \(from) to \(to)") { renameat(directory, from, directory, to) }
    }

    static func removeFile(_ path: String, relativeTo directory: CInt = AT_FDCWD) throws(WormholeError) {
        _ = try valueOrErrno("unlink \(path)") { unlinkat(directory, path, 0) }
    }

    /// `link(2)` within one directory: creates `to` only if nothing is there (`EEXIST` otherwise).
    static func link(_ from: String, _ to: String, in directory: CInt) throws(WormholeError) {
        _ = try valueOrErrno("link \(from) to \(to)") { linkat(directory, from, directory, to, 0) }
    }

    static func removeDirectory(_ path: String, relativeTo directory: CInt) throws(WormholeError) {
        _ = try valueOrErrno("rmdir \(path)") { unlinkat(directory, path, AT_REMOVEDIR) }
    }

    /// The names in the directory open as `directory`, less `.` and `..`; at most `limit` of them.
    static func listDirectory(_ directory: CInt, limit: Int = Limits.maximumListedNames) throws(WormholeError) -> [String] {
        // fdopendir takes the descriptor over, so it gets one of its own: opened anew, not dup(2)ed, because a
        // duplicate shares the directory's read offset, and two threads listing one folder at once would each
        // see part of it, or nothing.
        let copy = try valueOrErrno("openat") { openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard let stream = fdopendir(copy) else {
            let error = currentErrno()
            close(copy)
            throw WormholeError(.system, "fdopendir", errno: error)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while names.count < limit, let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `shutdown(2)`: with `SHUT_RD`, a peer's later sends fail (`EPIPE`) while what it sent before stays readable.
    /// Returns false when it failed (Darwin: ENOTCONN for a socket that is not connected).
    @discardableResult
    static func shutdownReading(_ fd: CInt) -> Bool {
        #if canImport(Glibc)
        Glibc.shutdown(fd, CInt(SHUT_RD)) == 0
        #else
        Darwin.shutdown(fd, SHUT_RD) == 0
        #endif
    }

    /// A non-blocking, close-on-exec pipe. On Darwin a write with no reader fails with EPIPE instead of raising
    /// SIGPIPE (`F_SETNOSIGPIPE`); elsewhere the caller closes the write end first.
    static func makePipe() throws(WormholeError) -> (read: CInt, write: CInt) {
        var fds: [CInt] = [-1, -1]
        _ = try valueOrErrno("pipe") { pipe(&fds) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        #if canImport(Darwin)
        _ = fcntl(fds[1], F_SETNOSIGPIPE, 1)
        #endif
        return (fds[0], fds[1])
    }

    static func writeSome(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) throws(WormholeError) -> Int {
        try valueOrErrno("write") { libcWrite(fd, bytes.baseAddress, bytes.count) }
    }

    static var processID: pid_t { getpid() }

    /// `path` with every symbolic link, `.` and `..` resolved, or nil when it cannot be (`realpath(3)`).
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Throws unless this process may create files in the folder open as `directory` (`faccessat(2)`).
    static func checkWriteAndSearch(_ directory: CInt) throws(WormholeError) {
        _ = try valueOrErrno("faccessat") { faccessat(directory, ".", W_OK | X_OK, 0) }
    }

    /// Sleeps the calling thread for `nanoseconds` (less if a signal interrupts it).
    static func sleep(nanoseconds: UInt64) {
        var pause = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        nanosleep(&pause, nil)
    }
    static var effectiveUserID: uid_t { geteuid() }
}


#if canImport(Glibc)
typealias FileStatus = Glibc.stat
#else
typealias FileStatus = Darwin.stat
#endif

private func libcClose(_ fd: CInt) -> CInt { close(fd) }
private func libcRead(_ fd: CInt, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func libcWrite(_ fd: CInt, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }

extension FileStatus {
    /// The last modification time, in nanoseconds since 1970. Any process can set a file's time to any value: one
    /// past what 64 bits of nanoseconds hold (before 1678 or after 2262) reads as the nearest end of that range.
    var modifiedNanoseconds: Int64 {
        #if canImport(Glibc)
        return nanoseconds(Int64(st_mtim.tv_sec), Int64(st_mtim.tv_nsec))
        #else
        // Darwin's field name; not compiled on this Linux machine.
        return nanoseconds(Int64(st_mtimespec.tv_sec), Int64(st_mtimespec.tv_nsec))
        #endif
    }

    /// How long ago, by the wall clock, the file was last modified, in nanoseconds: negative for a time in the
    /// future, and never past the ends of `Int64`, whatever time another process set.
    var ageNanoseconds: Int64 { nanosecondsSince(modifiedNanoseconds) }

    /// Which file this is: its device and inode. `dev_t` is signed on Darwin: taken by its bit pattern.
    var identity: FileIdentity { FileIdentity(device: UInt64(truncatingIfNeeded: st_dev), inode: UInt64(truncatingIfNeeded: st_ino)) }
}

/// The wall clock, in nanoseconds since 1970: what file times are measured in.
func wallClockNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return nanoseconds(Int64(now.tv_sec), Int64(now.tv_nsec))
}

/// How long ago `time` (wall-clock nanoseconds, as a file's) was: negative for the future, held at the ends of
/// `Int64` rather than trapping.
func nanosecondsSince(_ time: Int64) -> Int64 {
    let (age, overflow) = wallClockNanoseconds().subtractingReportingOverflow(time)
    return overflow ? (time < 0 ? .max : .min) : age
}

/// Seconds and nanoseconds as nanoseconds, held at the ends of `Int64` rather than trapping.
private func nanoseconds(_ seconds: Int64, _ nanoseconds: Int64) -> Int64 {
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    let (sum, overflowed) = scaled.addingReportingOverflow(nanoseconds)
    if overflowed { return nanoseconds < 0 ? .min : .max }
    return sum
}

/// A file's device and inode: the same path names another file once these differ.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}
