#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file of at most `limit` bytes whole.
func readSmallFile(_ path: String, relativeTo directory: Descriptor = .currentDirectory, limit: Int = 1 << 20)
    throws(WormholeError) -> [UInt8]
{
    let file = try Sys.open(path, relativeTo: directory)
    return try file.descriptor.readWhole(limit: limit)
}

/// Reads from `fd` until end of file; more than `limit` bytes is reported as corrupt data.
func readWhole(_ fd: CInt, limit: Int) throws(WormholeError) -> [UInt8] {
    var bytes: [UInt8] = []
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    defer { chunk.deallocate() }
    while true {
        let n = try Sys.readSome(fd, into: chunk)
        if n == 0 { return bytes }
        bytes.append(contentsOf: chunk[0..<n])
        if bytes.count > limit { throw WormholeError(.corruptData, "file is larger than \(limit) bytes") }
    }
}
