#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One listener's spool: a file in the container's `spool/` folder that holds, in order, what posters could
/// not put in the listener's socket. Every reader and writer holds `flock(2)` on it, briefly.
final class Spool: Sendable {
    let name: String
    private let descriptor: OwnedDescriptor

    enum Opening { case existing, new, reuse }

    /// Opens the spool `name` in `directory`. Only its listener creates it (`new`, or `reuse` for a durable
    /// listener, whose spool outlives its processes), so a missing spool means a gone listener.
    init(name: String, in directory: CInt, _ opening: Opening) throws(WormholeError) {
        self.name = name
        let creation: CInt = switch opening {
        case .existing: 0
        case .new: O_CREAT | O_EXCL
        case .reuse: O_CREAT
        }
        let flags = O_RDWR | creation | O_NOFOLLOW
        descriptor = try Sys.open(name, flags, mode: 0o600, relativeTo: directory)
    }

    /// Runs `body` holding the spool's lock, with the spool's current size in bytes.
    func withLock<R>(_ body: (_ size: Int) throws(WormholeError) -> R) throws(WormholeError) -> R {
        try Sys.withExclusiveLock(descriptor.rawValue) { () throws(WormholeError) -> R in
            try body(Int(try Sys.status(of: descriptor.rawValue).st_size))
        }
    }

    /// The spool's size without taking its lock: a hint, for deciding whether to drain.
    func currentSize() -> Int {
        (try? Sys.status(of: descriptor.rawValue)).map { Int($0.st_size) } ?? 0
    }

    /// Appends `record` at `size`; call it inside ``withLock(_:)``.
    func append(_ record: [UInt8], at size: Int) throws(WormholeError) {
        try record.withRawBytes { (bytes) throws(WormholeError) in try Sys.pwriteAll(descriptor.rawValue, bytes, at: size) }
    }

    /// Reads the whole spool and empties it; call it inside ``withLock(_:)``.
    func takeAll(size: Int) throws(WormholeError) -> [UInt8] {
        let bytes = try readAll(size: size)
        try Sys.truncate(descriptor.rawValue, 0)
        return bytes
    }

    /// Reads the whole spool; call it inside ``withLock(_:)``.
    func readAll(size: Int) throws(WormholeError) -> [UInt8] {
        guard size > 0 else { return [] }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        let count = try Sys.preadAll(descriptor.rawValue, into: buffer, at: 0)
        return Array(buffer[0..<count])
    }

    /// Replaces the spool's contents with `bytes`; call it inside ``withLock(_:)``.
    func replace(with bytes: [UInt8]) throws(WormholeError) {
        try Sys.truncate(descriptor.rawValue, 0)
        if !bytes.isEmpty { try append(bytes, at: 0) }
    }
}
