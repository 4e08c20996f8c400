// The address of a socket file whose path may be longer than `sun_path` (108 bytes on Linux, 104 on Darwin):
// an iOS App Group container's path plus `Wormhole/listeners/<16 hex digits>.socket` is about 126 bytes.
// - Linux reaches such a file through the directory's descriptor: `/proc/self/fd/<n>/<name>`.
// - Darwin has neither `/proc` nor `bindat`/`connectat`, but its kernel takes an address longer than
//   `sockaddr_un` when `sun_len` says so, up to `SOCK_MAXADDRLEN` (255 bytes; xnu `unp_bind`, `getsockaddr`).
//   That branch is written from the xnu sources; this Linux machine cannot compile it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum SocketAddress {
    /// The longest socket path this platform can reach at all.
    static var maximumPathLength: Int {
        #if canImport(Darwin)
        return Int(SOCK_MAXADDRLEN) - (MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2) - 1
        #else
        return UnixSocket.maximumPathLength
        #endif
    }

    /// Calls `body` with the address of `name` in the directory open as `directory` (whose path is
    /// `directoryPath`), and returns what it returns.
    static func with(
        directory: CInt, directoryPath: String, name: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> CInt
    ) throws(WormholeError) -> CInt {
        var path = directoryPath + "/" + name
        #if os(Linux)
        if path.utf8.count > UnixSocket.maximumPathLength { path = "/proc/self/fd/\(directory)/\(name)" }
        #endif
        guard path.utf8.count <= maximumPathLength else {
            throw WormholeError(.invalidContainer, "socket path \(directoryPath)/\(name) is longer than \(maximumPathLength) bytes")
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        let length = max(MemoryLayout<sockaddr_un>.size, pathOffset + path.utf8.count + 1)
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: MemoryLayout<sockaddr_un>.alignment)
        defer { storage.deallocate() }
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        storage.withMemoryRebound(to: sockaddr_un.self) { address in
            #if canImport(Darwin)
            address[0].sun_len = UInt8(truncatingIfNeeded: length)
            #endif
            address[0].sun_family = sa_family_t(AF_UNIX)
        }
        UnsafeMutableRawBufferPointer(rebasing: storage[pathOffset...]).copyBytes(from: path.utf8)
        guard let base = storage.baseAddress else { return EINVAL }
        return body(base.assumingMemoryBound(to: sockaddr.self), socklen_t(length))
    }
}
