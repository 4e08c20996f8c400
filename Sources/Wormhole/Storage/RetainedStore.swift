import Foundation

/// The current value of each retained notification name: one file per name in the container's `retained/`
/// folder, holding a spool segment of one record. Replaced whole by writing a temporary file and renaming it,
/// so readers see the old value or the new one and no lock is ever held.
struct RetainedStore: Sendable {
    let container: Container

    /// The file of `name`: `n-` and its UTF-8 in hex when that fits a file name, else `h-` and a 64-bit hash
    /// (the frame inside names the notification, so a collision reads as "no value", never as another's).
    static func fileName(for name: String) -> String {
        let utf8 = Array(name.utf8)
        if utf8.count <= 100 { return "n-" + utf8.map { String(format: "%02x", $0) }.joined() }
        return "h-" + FileName.hex(FileName.fnv1a(utf8))
    }

    /// Stores an encoded frame as the current value of `name`: a new file renamed over the old one.
    func store(_ frame: [UInt8], name: String) throws(WormholeError) {
        StopPoint.reached("retained.store")
        try StoredFile.replace(Self.fileName(for: name), in: container.retainedDescriptor, with: SpoolRecord.segment([frame]))
    }

    /// The current frame of `name`, or nil when there is none. A damaged file is reported and reads as none.
    func load(name: String) -> Frame? {
        let bytes: [UInt8]
        do throws(WormholeError) {
            bytes = try StoredFile.read(Self.fileName(for: name), in: container.retainedDescriptor, limit: Self.maximumFileSize)
        } catch where error.systemErrno == .noSuchFile {
            return nil
        } catch {
            Log.warning("retained \(name) cannot be read: \(error)")
            return nil
        }
        guard let record = SpoolRecord.decodeAll(bytes).frames.first,
            let frame = try? Frame(decoding: record), frame.kind == .notification, frame.name == name
        else {
            Log.warning("retained \(name) in \(container.retainedPath) is damaged; ignoring it")
            return nil
        }
        return frame
    }

    func clear(name: String) {
        try? Sys.removeFile(Self.fileName(for: name), relativeTo: container.retainedDescriptor)
    }

    /// Removes every retained value of the container.
    func clearAll() {
        let names = (try? Sys.listDirectory(container.retainedDescriptor, limit: Limits.maximumNamesCleared)) ?? []
        for name in names where name.hasPrefix("n-") || name.hasPrefix("h-") {
            try? Sys.removeFile(name, relativeTo: container.retainedDescriptor)
        }
    }

    /// Removes the retained values whose notification name starts with `prefix`, and no other.
    ///
    /// A file named after its name (`n-`) is told by its file name alone; one named by a hash (`h-`, a name
    /// too long for a file name) is read first, and removed only when the frame inside names a notification
    /// with `prefix`. A hashed file that cannot be read or is damaged is left: it reads as no value anyway, and
    /// nothing says whose it is.
    func clearAll(namesStartingWith prefix: String) {
        let folder = container.retainedDescriptor
        let named = "n-" + Array(prefix.utf8).map { String(format: "%02x", $0) }.joined()
        let names = (try? Sys.listDirectory(folder, limit: Limits.maximumNamesCleared)) ?? []
        for file in names {
            if file.hasPrefix(named) {
                try? Sys.removeFile(file, relativeTo: folder)
            } else if file.hasPrefix("h-"), let bytes = try? StoredFile.read(file, in: folder, limit: Self.maximumFileSize),
                let record = SpoolRecord.decodeAll(bytes).frames.first, let frame = try? Frame(decoding: record),
                frame.name.hasPrefix(prefix)
            {
                try? Sys.removeFile(file, relativeTo: folder)
            }
        }
    }

    /// The largest file a retained value takes: one record of the largest frame.
    static let maximumFileSize = SpoolRecord.headerSize + SpoolRecord.recordHeaderSize + SpoolRecord.maximumFrameSize
}
