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
