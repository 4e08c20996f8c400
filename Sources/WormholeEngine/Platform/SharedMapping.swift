#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The first `count` bytes of a file mapped shared, readable and writable, unmapped when the last reference goes:
/// the file's own pages, written in place (a poster's frame file, ``FrameFile``).
///
/// Only for a memory file sealed against shrinking (``MemoryFile/fixedSize(_:)``): a mapping of a file that
/// shrinks faults on the pages it lost. Pages are mapped on first touch, and stay mapped for the mapping's life.
package final class SharedMapping: Sendable {
    // Safe because: the address never changes, and is unmapped once, by the last reference. What is written
    // through it is shared with other processes anyway, and is its user's to order.
    package nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer

    /// Maps `count` bytes of `fd`, open for reading and writing, from its start; `count` must be at least one and
    /// at most the file's size.
    package init(_ file: Descriptor, count: Int) throws(WormholeError) {
        let fd = file.rawValue
        guard count > 0 else { throw WormholeError(.system, "mmap of an empty file", errno: EINVAL) }
        let address = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let address, address != MAP_FAILED else {
            throw WormholeError(.system, "mmap of \(count) bytes", errno: currentErrno())
        }
        bytes = UnsafeMutableRawBufferPointer(start: address, count: count)
    }

    deinit {
        if let address = bytes.baseAddress { munmap(address, bytes.count) }
    }
}
