import Foundation

/// The current value of each retained notification name: one file per name in the container's `retained/`
/// folder, holding a spool segment of one record. Replaced whole by writing a temporary file and renaming it,
/// so readers see the old value or the new one and no lock is ever held.
package struct RetainedStore: Sendable {
    let container: Container

    /// The file of `name`: `n-` and its UTF-8 in hex when that fits a file name, else `h-` and a 64-bit hash
    /// (the frame inside names the notification, so a collision reads as "no value", never as another's).
    static func fileName(for name: String) -> String {
        let utf8 = Array(name.utf8)
        if utf8.count <= longestSpelledName { return spelledPrefix + utf8.map { String(format: "%02x", $0) }.joined() }
        return hashedPrefix + FileName.hex(FileName.fnv1a(utf8))
    }

    /// The prefix of a file named after its notification's name, and of one named by a hash of it.
    static let spelledPrefix = "n-"
    static let hashedPrefix = "h-"
    /// The longest name, in UTF-8 bytes, spelled out in its file's name; a longer one is hashed.
    static let longestSpelledName = 100

    /// The names that have a retained value, each read and checked as ``load(name:)`` reads it: a file named by
    /// a hash lists as the name its frame holds, when that name hashes to it. What is not a whole retained value
    /// of the name its file is named for (see ``StoredNames``) is skipped; the first
    /// ``Limits/maximumListedNames`` entries of the folder are looked at.
    /// - Throws: A system error when the folder cannot be listed.
    package func names() throws(WormholeError) -> StoredNames {
        var found = StoredNames()
        let folder = container.retainedDescriptor
        for entry in try Sys.listDirectory(folder) where !entry.hasPrefix(StoredFile.temporaryPrefix) {
            let spelled = StoredNames.spelledName(entry)
            guard spelled != nil || StoredNames.isHashedName(entry) else {
                found.skip(entry, "is not the name of a retained value")
                continue
            }
            let frame: Frame
            do throws(WormholeError) {
                let bytes = try StoredFile.read(entry, in: folder, limit: Self.maximumFileSize)
                guard let record = SpoolRecord.decodeAll(bytes).frames.first else {
                    throw WormholeError(.corruptData, "holds no whole record")
                }
                frame = try Frame(decoding: record)
            } catch where error.systemErrno == .noSuchFile {
                continue
            } catch {
                found.skip(entry, "\(error)")
                continue
            }
            // The bytes, not the strings: two spellings of one character are two names here.
            guard frame.kind == .notification,
                spelled.map({ $0.utf8.elementsEqual(frame.name.utf8) }) ?? (Self.fileName(for: frame.name) == entry)
            else {
                found.skip(entry, "holds a frame of another name")
                continue
            }
            found.names.append(frame.name)
        }
        found.sort()
        return found
    }

    /// Stores an encoded frame as the current value of `name`: a new file renamed over the old one.
    func store(_ frame: [UInt8], name: String) throws(WormholeError) {
        StopPoint.reached("retained.store")
        try StoredFile.replace(Self.fileName(for: name), in: container.retainedDescriptor, with: SpoolRecord.segment([frame]))
    }

    /// The current frame of `name`, or nil when there is none. A damaged file is reported and reads as none.
    package func load(name: String) -> Frame? {
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

    package func clear(name: String) {
        try? Sys.removeFile(Self.fileName(for: name), relativeTo: container.retainedDescriptor)
    }

    /// Removes every retained value of the container.
    package func clearAll() {
        let names = (try? Sys.listDirectory(container.retainedDescriptor, limit: Limits.maximumNamesCleared)) ?? []
        for name in names where name.hasPrefix(Self.spelledPrefix) || name.hasPrefix(Self.hashedPrefix) {
            try? Sys.removeFile(name, relativeTo: container.retainedDescriptor)
        }
    }

    /// Removes the retained values whose notification name starts with `prefix`, and no other.
    ///
    /// A file named after its name (`n-`) is told by its file name alone; one named by a hash (`h-`, a name
    /// too long for a file name) is read first, and removed only when the frame inside names a notification
    /// with `prefix`. A hashed file that cannot be read or is damaged is left: it reads as no value anyway, and
    /// nothing says whose it is.
    package func clearAll(namesStartingWith prefix: String) {
        let folder = container.retainedDescriptor
        let named = Self.spelledPrefix + Array(prefix.utf8).map { String(format: "%02x", $0) }.joined()
        let names = (try? Sys.listDirectory(folder, limit: Limits.maximumNamesCleared)) ?? []
        for file in names {
            if file.hasPrefix(named) {
                try? Sys.removeFile(file, relativeTo: folder)
            } else if file.hasPrefix(Self.hashedPrefix), let bytes = try? StoredFile.read(file, in: folder, limit: Self.maximumFileSize),
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
