/// A file descriptor that is closed exactly once: when consumed by ``close()`` or when dropped.
struct OwnedDescriptor: ~Copyable {
    let rawValue: CInt

    init(rawValue: CInt) {
        self.rawValue = rawValue
    }

    consuming func close() {
        let fd = rawValue
        discard self
        Sys.close(fd)
    }

    /// Gives up ownership: the descriptor stays open and is the caller's to close.
    consuming func release() -> CInt {
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
struct Pipe: ~Copyable {
    /// The ends' descriptors; -1 once closed.
    private(set) var read: CInt
    private(set) var write: CInt

    init(read: CInt, write: CInt) {
        self.read = read
        self.write = write
    }

    var isOpen: Bool { write >= 0 }

    /// Closes both ends, the write end first; once closed, does nothing.
    mutating func close() {
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
final class HeldDescriptor {
    private let owned: OwnedDescriptor

    init(_ owned: consuming OwnedDescriptor) {
        self.owned = owned
    }

    var rawValue: CInt { owned.rawValue }
}
