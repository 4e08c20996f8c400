/// A file descriptor that is closed exactly once: when consumed by ``close()`` or when dropped.
package struct OwnedDescriptor: ~Copyable {
    package let rawValue: CInt

    init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    /// The descriptor, lent for calls that must not outlive this owner.
    package var descriptor: Descriptor { Descriptor(rawValue: rawValue) }

    package consuming func close() {
        let fd = rawValue
        discard self
        Sys.close(fd)
    }

    /// Gives up ownership: the descriptor stays open and is the caller's to close.
    package consuming func release() -> CInt {
        let fd = rawValue
        discard self
        return fd
    }

    deinit {
        Sys.close(rawValue)
    }
}

/// A pipe's two ends, closed together exactly once, by ``close()`` or when dropped: the write end first, so that
/// no write ever finds the pipe without a reader (which raises SIGPIPE where the system cannot be told not to).
package struct PipeEnds: ~Copyable {
    /// The ends' descriptors; -1 once closed.
    package private(set) var read: CInt
    package private(set) var write: CInt

    init(read: CInt, write: CInt) {
        self.read = read
        self.write = write
    }

    package var isOpen: Bool { write >= 0 }

    /// Closes both ends, the write end first; once closed, does nothing.
    package mutating func close() {
        guard isOpen else { return }
        Sys.close(write)
        Sys.close(read)
        write = -1
        read = -1
    }

    deinit {
        if write >= 0 { Sys.close(write) }
        if read >= 0 { Sys.close(read) }
    }
}

/// An ``OwnedDescriptor`` that an array or several owners can hold (an array cannot hold a `~Copyable` value):
/// closed when the last reference goes.
package final class HeldDescriptor {
    private let owned: OwnedDescriptor

    package init(_ owned: consuming OwnedDescriptor) {
        self.owned = owned
    }

    package var rawValue: CInt { owned.rawValue }
}
