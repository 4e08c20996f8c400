#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The first `count` bytes of a file mapped twice, both unmapped when the last reference goes: read-only and
/// shared, to be parsed and copied from; and private, copy-on-write, to be lent once (``lend()``) to values
/// that use the bytes where they are.
///
/// Only for a file that can neither shrink nor change while mapped (a memory file sealed against both): a
/// mapping of a file that shrinks faults on the pages it lost. The lent mapping is writable because
/// `Data(bytesNoCopy:)` writes in place when it holds the only reference: a write copies the page into this
/// process's lent mapping alone, and neither the file nor the read-only mapping sees it. Pages are mapped on
/// first read (a few at a time), not when the mapping is made.
package final class FileMapping: Sendable {
    // Safe because: the addresses are only read here, and unmapped once, by the last reference.
    nonisolated(unsafe) let bytes: UnsafeRawBufferPointer
    nonisolated(unsafe) private let lendable: UnsafeMutableRawPointer
    private let lent = Atomic(false)

    /// The size of a page, the block size of a file this maps. A file of huge pages (a `hugetlbfs` memory file)
    /// could not be unmapped by its size in bytes: its caller reads it instead.
    package static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Maps `count` bytes of `fd` from its start; `count` must be at least one and at most the file's size.
    package init(_ file: Descriptor, count: Int) throws(WormholeError) {
        let fd = file.rawValue
        guard count > 0 else { throw WormholeError(.system, "mmap of an empty file", errno: EINVAL) }
        let shared = try Self.map(fd, count: count, PROT_READ, MAP_SHARED)
        do throws(WormholeError) {
            lendable = try Self.map(fd, count: count, PROT_READ | PROT_WRITE, MAP_PRIVATE)
        } catch {
            munmap(shared, count)
            throw error
        }
        bytes = UnsafeRawBufferPointer(start: shared, count: count)
    }

    private static func map(_ fd: CInt, count: Int, _ protection: CInt, _ flags: CInt)
        throws(WormholeError) -> UnsafeMutableRawPointer
    {
        let address = mmap(nil, count, protection, flags, fd, 0)
        guard let address, address != MAP_FAILED else {
            throw WormholeError(.system, "mmap of \(count) bytes", errno: currentErrno())
        }
        return address
    }

    /// The lent mapping, for the first caller alone: two values over the same bytes there would see each
    /// other's writes, so every later caller copies out of ``bytes`` instead.
    package func lend() -> Lent? {
        guard !lent.exchange(true, ordering: .relaxed), let start = bytes.baseAddress else { return nil }
        return Lent(mapping: self, offset: lendable - UnsafeMutableRawPointer(mutating: start))
    }

    /// The lent mapping: where the bytes of ``FileMapping/bytes`` lie in it, and the mapping to keep alive.
    package struct Lent {
        package let mapping: FileMapping
        let offset: Int

        /// The address in the lent mapping of the byte at `address` in ``FileMapping/bytes``.
        package func address(of address: UnsafeRawPointer) -> UnsafeMutableRawPointer {
            UnsafeMutableRawPointer(mutating: address) + offset
        }
    }

    deinit {
        if let address = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: address), bytes.count) }
        munmap(lendable, bytes.count)
    }
}
