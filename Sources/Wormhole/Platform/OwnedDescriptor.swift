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

    deinit {
        Sys.close(rawValue)
    }
}
