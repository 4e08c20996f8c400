#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor, typed: an open file, folder, socket or pipe end, with the calls made on it as methods.
///
/// It owns nothing and closes nothing by itself: an ``OwnedDescriptor`` owns one and lends it, and whoever holds
/// one of these must not use it past its owner's life. Named apart from swift-system's `FileDescriptor`, so that
/// an application importing both never meets two types of one name. The methods call ``Sys``, ``UnixSocket`` and
/// ``DescriptorPassing``, which alone call the C library and say what each errno means; this type only carries
/// the value, at no cost (a struct of one `CInt`).
package struct Descriptor: Hashable, Sendable {
    /// The number the system gave the descriptor.
    package let rawValue: CInt

    package init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    /// What a path relative to no folder is relative to: the working directory (`AT_FDCWD`).
    package static let currentDirectory = Descriptor(rawValue: AT_FDCWD)

    /// Closes the descriptor (`close(2)`), never retried: for one that no ``OwnedDescriptor`` owns.
    package func close() {
        Sys.close(rawValue)
    }

    // MARK: Files

    /// Reads what is there, at most `buffer.count` bytes (`read(2)`); 0 at the end of the file.
    package func readSome(into buffer: UnsafeMutableRawBufferPointer) throws(WormholeError) -> Int {
        try Sys.readSome(rawValue, into: buffer)
    }

    /// Writes some of `bytes` (`write(2)`); returns how many.
    package func writeSome(_ bytes: UnsafeRawBufferPointer) throws(WormholeError) -> Int {
        try Sys.writeSome(rawValue, bytes)
    }

    /// Writes all of `bytes` at `offset` (`pwrite(2)`, looping on short writes).
    package func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WormholeError) {
        try Sys.pwriteAll(rawValue, bytes, at: offset)
    }

    /// Reads `buffer.count` bytes at `offset` (`pread(2)`), or fewer when the file ends first; returns how many.
    package func readAll(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(WormholeError) -> Int {
        try Sys.preadAll(rawValue, into: buffer, at: offset)
    }

    /// Reads from the current offset to the end of the file; more than `limit` bytes is corrupt data.
    package func readWhole(limit: Int) throws(WormholeError) -> [UInt8] {
        try WormholeEngine.readWhole(rawValue, limit: limit)
    }

    /// The file's status (`fstat(2)`).
    package func status() throws(WormholeError) -> FileStatus {
        try Sys.status(of: rawValue)
    }

    /// Sets the file's size (`ftruncate(2)`).
    package func truncate(to size: Int) throws(WormholeError) {
        try Sys.truncate(rawValue, size)
    }

    // MARK: Sockets

    /// Sends one whole message without blocking (``UnixSocket/send(_:_:)``).
    package func send(_ bytes: UnsafeRawBufferPointer) throws(WormholeError) {
        try UnixSocket.send(self, bytes)
    }

    /// Sends one whole message carrying `file`, without blocking (``DescriptorPassing/send(_:_:passing:)``).
    package func send(_ bytes: UnsafeRawBufferPointer, passing file: Descriptor) throws(WormholeError) {
        try DescriptorPassing.send(self, bytes, passing: file)
    }

    /// Sends an empty datagram that ends a wait in a read (``UnixSocket/sendWake(_:)``); false when it cannot
    /// reach its socket.
    package func sendWake() -> Bool {
        UnixSocket.sendWake(self)
    }

    /// Accepts one pending connection, or nil when none is pending (``UnixSocket/accept(_:)``).
    package func accept() throws(WormholeError) -> OwnedDescriptor? {
        try UnixSocket.accept(self)
    }
}
