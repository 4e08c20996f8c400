#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The first `count` bytes of a file mapped shared, unmapped when the last reference goes: a view of the file's
/// own pages, which other processes mapping it see change as it is written.
///
/// Only for a memory file sealed against shrinking (``MemoryFile/fixedSize(_:)``): a mapping of a file that
/// shrinks faults on the pages it lost. Pages are mapped on first touch, and stay mapped for the mapping's life.
final class SharedMapping: Sendable {
    // Safe because: the address never changes, and is unmapped once, by the last reference. What is read and
    // written through it is shared with other processes anyway, and is the users' to order.
    nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer

    /// Maps `count` bytes of `fd` from its start, readable, and writable when `writable` (which needs a
    /// descriptor open for writing); `count` must be at least one and at most the file's size.
    init(_ fd: CInt, count: Int, writable: Bool) throws(WormholeError) {
        guard count > 0 else { throw WormholeError(.system, "mmap of an empty file", errno: EINVAL) }
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        let address = mmap(nil, count, protection, MAP_SHARED, fd, 0)
        guard let address, address != MAP_FAILED else {
            throw WormholeError(.system, "mmap of \(count) bytes", errno: currentErrno())
        }
        bytes = UnsafeMutableRawBufferPointer(start: address, count: count)
    }

    deinit {
        if let address = bytes.baseAddress { munmap(address, bytes.count) }
    }
}
