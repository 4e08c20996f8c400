#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Sys {
    /// Runs `body` holding an exclusive `flock(2)` on `fd`, and releases it on every path out.
    ///
    /// Keep `body` short and free of anything that blocks: on iOS a process suspended while it holds a lock on
    /// a file in a shared container is killed.
    static func withExclusiveLock<R>(_ fd: CInt, _ body: () throws(WormholeError) -> R) throws(WormholeError) -> R {
        try lock(fd, LOCK_EX)
        defer { _ = try? lock(fd, LOCK_UN) }
        return try body()
    }
}
