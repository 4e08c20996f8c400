// The address of a socket file whose path may be longer than `sun_path` (108 bytes on Linux, 104 on Darwin):
// an iOS App Group container's path plus `Wormhole/listeners/<16 hex digits>.socket` is about 126 bytes.
// Linux reaches such a file through the directory's descriptor (`/proc/self/fd/<n>/<name>`); Darwin's kernel takes
// an address longer than `sockaddr_un` when `sun_len` says so (``reachablePath(_:directory:name:)`` and
// ``setLength(_:_:)``, in Linux/Linux.swift and Darwin/Darwin.swift).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SocketAddress {
    /// Calls `body` with the address of `name` in the directory open as `directory` (whose path is
    /// `directoryPath`), and returns what it returns.
    /// - Throws: ``WormholeError/Code/invalidContainer`` for a path longer than this platform reaches
    ///   (``maximumPathLength``); what `body` throws.
    static func with<Result>(
        directory: CInt, directoryPath: String, name: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(WormholeError) -> Result
    ) throws(WormholeError) -> Result {
        let path = reachablePath(directoryPath + "/" + name, directory: directory, name: name)
        guard path.utf8.count <= maximumPathLength else {
            throw WormholeError(.invalidContainer, "socket path \(directoryPath)/\(name) is longer than \(maximumPathLength) bytes")
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        let length = max(MemoryLayout<sockaddr_un>.size, pathOffset + path.utf8.count + 1)
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: MemoryLayout<sockaddr_un>.alignment)
        defer { storage.deallocate() }
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        storage.withMemoryRebound(to: sockaddr_un.self) { address in
            setLength(&address[0], length)
            address[0].sun_family = sa_family_t(AF_UNIX)
        }
        UnsafeMutableRawBufferPointer(rebasing: storage[pathOffset...]).copyBytes(from: path.utf8)
        guard let base = storage.baseAddress else { throw WormholeError(.system, "socket address", errno: Errno.outOfMemory) }
        return try body(base.assumingMemoryBound(to: sockaddr.self), socklen_t(length))
    }
}
