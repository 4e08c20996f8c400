#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A 64-bit counter in a small file that every process of the container maps: a writer adds one after each
/// change it makes, and readers learn of the change with one memory load instead of a system call.
///
/// Only a hint: a reader that sees the same value may still look for itself now and then, in case a writer died
/// between its change and its increment, or the file was replaced.
/// Safe because the pointer never changes after init, and the memory it points to is only reached atomically.
final class SharedCounter: @unchecked Sendable {
    private let address: UnsafeMutablePointer<Atomic<UInt64>>
    private static let size = MemoryLayout<UInt64>.size

    /// Maps `name` in `directory`, creating it (0600, eight zero bytes) if it is missing.
    init(file name: String, in directory: CInt) throws(WormholeError) {
        let file = try Sys.open(name, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600, relativeTo: directory)
        if try Sys.status(of: file.rawValue).st_size < Self.size {
            // Growing to the same size twice is harmless, and never shrinks a counter another process uses.
            try Sys.truncate(file.rawValue, Self.size)
        }
        address = try Sys.mapShared(file.rawValue, size: Self.size).bindMemory(to: Atomic<UInt64>.self, capacity: 1)
    }

    deinit {
        Sys.unmap(UnsafeMutableRawPointer(address), size: Self.size)
    }

    var value: UInt64 {
        address.pointee.load(ordering: .acquiring)
    }

    func increment() {
        address.pointee.add(1, ordering: .releasing)
    }
}
