/// A file descriptor that is closed exactly once: when consumed by ``close()`` or when dropped. It lends its
/// ``Descriptor`` for calls, which must not outlive it.
package struct OwnedDescriptor: ~Copyable {
    package let descriptor: Descriptor

    init(rawValue: CInt) {
        descriptor = Descriptor(rawValue: rawValue)
    }

    /// The number the system gave the descriptor, for the calls in this folder.
    var rawValue: CInt { descriptor.rawValue }

    package consuming func close() {
        let fd = descriptor
        discard self
        fd.close()
    }

    /// Gives up ownership: the descriptor stays open and is the caller's to close.
    package consuming func release() -> Descriptor {
        let fd = descriptor
        discard self
        return fd
    }

    deinit {
        descriptor.close()
    }
}

/// A pipe's two ends, closed together exactly once, by ``close()`` or when dropped: the write end first, so that
/// no write ever finds the pipe without a reader (which raises SIGPIPE where the system cannot be told not to).
package struct PipeEnds: ~Copyable {
    /// The ends; closed, and not to be used, once ``isOpen`` is false.
    package let read: Descriptor
    package let write: Descriptor
    package private(set) var isOpen = true

    init(read: CInt, write: CInt) {
        self.read = Descriptor(rawValue: read)
        self.write = Descriptor(rawValue: write)
    }

    /// Closes both ends, the write end first; once closed, does nothing.
    package mutating func close() {
        guard isOpen else { return }
        write.close()
        read.close()
        isOpen = false
    }

    deinit {
        if isOpen {
            write.close()
            read.close()
        }
    }
}

/// An ``OwnedDescriptor`` that an array or several owners can hold (an array cannot hold a `~Copyable` value):
/// closed when the last reference goes.
package final class HeldDescriptor {
    private let owned: OwnedDescriptor

    package init(_ owned: consuming OwnedDescriptor) {
        self.owned = owned
    }

    package var descriptor: Descriptor { owned.descriptor }
}
