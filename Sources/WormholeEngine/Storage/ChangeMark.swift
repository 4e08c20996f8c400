import Synchronization

/// An 8-byte file whose value every writer changes (to a fresh random number) after changing what it marks:
/// a reader learns of a change with one `pread(2)` instead of listing a folder.
///
/// Only a hint, never trusted for correctness: a reader still looks for itself now and then, since a writer can
/// die between its change and its mark. Nothing is mapped, so a truncated or replaced file cannot raise
/// `SIGBUS`; a missing, short or replaced file reads as "changed".
final class ChangeMark: Sendable {
    private let name: String
    private let directory: Descriptor
    private let file = Mutex<OwnedDescriptor?>(nil)
    /// The descriptor `touch` writes through, opened and checked once.
    private let writer = Mutex<OwnedDescriptor?>(nil)

    init(_ name: String, in directory: Descriptor) {
        self.name = name
        self.directory = directory
    }

    /// The current value; 0 when the file cannot be read (callers treat 0 as "look for yourself"). A file of more
    /// than one link (planted from elsewhere, which no writer writes) is not kept: it reads as 0 until a writer
    /// has replaced it.
    var value: UInt64 {
        file.withLock { file -> UInt64 in
            if file == nil, let opened = try? StoredFile.openForReading(name, in: directory, limit: 64) {
                guard opened.status.linkCount == 1 else { return 0 }
                file = opened.takeFile()
            }
            guard let fd = file?.descriptor else { return 0 }
            var value: UInt64 = 0
            let count = withUnsafeMutableBytes(of: &value) { raw in (try? fd.readAll(into: raw, at: 0)) ?? 0 }
            return count == 8 ? value : 0
        }
    }

    /// Tells readers that something changed: writes a fresh value in place, through a descriptor kept open while
    /// the name still names its file, and checked to be a regular file of one link (so never through a link to a file elsewhere); creates the
    /// file when it is missing, and replaces it when it is damaged or of another type. Returns whether it wrote
    /// through the descriptor it already kept: a reader keeping an older file open (one created, replaced, or
    /// renamed into place by someone else since) learns of the change only when it checks the name again.
    @discardableResult
    func touch() -> Bool {
        var value = UInt64.random(in: 1...UInt64.max)
        let bytes = withUnsafeBytes(of: &value) { Array($0) }
        return writer.withLock { writer -> Bool in
            do throws(WormholeError) {
                // The file at the name may have been replaced or removed since it was opened: then writing
                // through the old descriptor would tell nobody.
                if let fd = writer?.descriptor,
                    (try? Sys.status(name, relativeTo: directory, followLinks: false))?.identity != (try? fd.status())?.identity
                {
                    writer = nil
                }
                let kept = writer != nil
                if writer == nil {
                    let file = try Sys.open(name, [.writeOnly, .noFollow, .nonBlocking], relativeTo: directory)
                    try StoredFile.check(try file.descriptor.status(), name, limit: 64, forWriting: true)
                    writer = consume file
                }
                guard let fd = writer?.descriptor else { return false }
                try bytes.withRawBytes { (raw) throws(WormholeError) in try fd.writeAll(raw, at: 0) }
                return kept
            } catch where error.systemErrno == .noSuchFile {
                _ = try? StoredFile.create(name, in: directory, with: bytes)
                return false
            } catch {
                writer = nil
                try? StoredFile.replace(name, in: directory, with: bytes)
                return false
            }
        }
    }

    /// Drops the kept descriptor, so that the next read opens whatever file has the name now.
    func reopen() {
        file.withLock { $0 = nil }
    }

    /// Whether the kept descriptor still reads the file that has the name.
    func isCurrent() -> Bool {
        file.withLock { file -> Bool in
            guard let fd = file?.descriptor, let kept = try? fd.status(),
                let named = try? Sys.status(name, relativeTo: directory, followLinks: false)
            else { return false }
            return kept.identity == named.identity
        }
    }
}
