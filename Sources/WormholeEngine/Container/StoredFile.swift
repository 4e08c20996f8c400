/// Reading and writing the container's files so that nothing another process or the file system puts there can
/// hang, crash or redirect this one, and no lock is ever taken.
///
/// - Reads open with `O_NOFOLLOW | O_NONBLOCK` (a FIFO opens at once and is then refused), accept only a regular
///   file, and stop at a size limit. (A file with a second link is read like any other: what it holds is checked
///   as any file's content is, and a file being linked into place has two links for a moment.)
/// - The few files written in place (change marks) are written only while they have a single link, so never
///   through a hard link to a file elsewhere.
/// - Writes never open an existing file: they create a new file under a random name with `O_EXCL | O_NOFOLLOW`,
///   write it whole, and then `rename(2)` it over the old one (readers see the old file or the new one) or
///   `link(2)` it into place (only one of several writers wins).
package enum StoredFile {
    /// The prefix of temporary files; readers skip them, housekeeping removes old ones.
    package static let temporaryPrefix = ".tmp-"

    /// Opens `name` for reading and checks that it is a regular file no larger than `limit`.
    /// - Throws: `ENOENT` as a ``WormholeError/Code/system`` error when it is missing, and
    ///   ``WormholeError/Code/corruptData`` when it is of another type or too large.
    package static func openForReading(_ name: String, in directory: Descriptor, limit: Int) throws(WormholeError) -> OpenedFile {
        var attempts = 0
        while true {
            let file = try Sys.open(name, [.noFollow, .nonBlocking], relativeTo: directory)
            let status = try file.descriptor.status()
            // No link left: a writer renamed a new file over it between the open and the fstat. Open the new one.
            if status.linkCount == 0 && status.isRegularFile && attempts < 8 {
                attempts += 1
                continue
            }
            try check(status, name, limit: limit)
            return OpenedFile(file: file, status: status)
        }
    }

    /// Refuses anything but a regular file at most `limit` bytes long; one that will be written in place must
    /// also have exactly one link.
    package static func check(_ status: FileStatus, _ name: String, limit: Int, forWriting: Bool = false) throws(WormholeError) {
        guard status.isRegularFile else {
            throw WormholeError(.corruptData, "\(name) is not a regular file")
        }
        guard status.linkCount == 1 || !forWriting else {
            throw WormholeError(.corruptData, "\(name) has \(status.linkCount) links; a file linked elsewhere is refused")
        }
        guard status.size >= 0, status.size <= limit else {
            throw WormholeError(.corruptData, "\(name) is \(status.size) bytes, over the \(limit)-byte limit")
        }
    }

    /// Reads `name` whole, checked as ``openForReading(_:in:limit:)`` does.
    package static func read(_ name: String, in directory: Descriptor, limit: Int) throws(WormholeError) -> [UInt8] {
        let opened = try openForReading(name, in: directory, limit: limit)
        return try opened.file.descriptor.readWhole(limit: limit)
    }

    /// A new file of `bytes` under a fresh temporary name; returns the name.
    package static func writeTemporary(_ bytes: [UInt8], in directory: Descriptor) throws(WormholeError) -> String {
        let name = temporaryPrefix + FileName.hex(UInt64.random(in: 1...UInt64.max))
        let file = try Sys.open(name, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600, relativeTo: directory)
        do throws(WormholeError) {
            try bytes.withRawBytes { (raw) throws(WormholeError) in try file.descriptor.writeAll(raw, at: 0) }
        } catch {
            file.close()
            try? Sys.removeFile(name, relativeTo: directory)
            throw error
        }
        return name
    }

    /// Replaces `name` with a file holding `bytes`: readers see the old file or the new one, never a torn one.
    package static func replace(_ name: String, in directory: Descriptor, with bytes: [UInt8]) throws(WormholeError) {
        let temporary = try writeTemporary(bytes, in: directory)
        StopPoint.reached("file.replace")
        do throws(WormholeError) {
            try Sys.renameFile(temporary, name, in: directory)
        } catch {
            try? Sys.removeFile(temporary, relativeTo: directory)
            throw error
        }
    }

    /// Creates `name` holding `bytes` unless something is there already; returns whether it did.
    package static func create(_ name: String, in directory: Descriptor, with bytes: [UInt8]) throws(WormholeError) -> Bool {
        let temporary = try writeTemporary(bytes, in: directory)
        defer { try? Sys.removeFile(temporary, relativeTo: directory) }
        do throws(WormholeError) {
            try Sys.link(temporary, name, in: directory)
            return true
        } catch where error.systemErrno == .fileExists {
            return false
        }
    }

    /// Removes temporary files older than `age`: left by writers that died between create and rename (and, in
    /// `listeners/`, sockets of claims that died half-way, with `prefixes`).
    package static func removeStaleTemporaries(
        in directory: Descriptor, olderThan age: Interval = Limits.staleTemporaryAge, prefixes: [String] = [temporaryPrefix]
    ) {
        guard let names = try? Sys.listDirectory(directory) else { return }
        let limit = age.signedNanoseconds
        for name in names where prefixes.contains(where: { name.hasPrefix($0) }) {
            guard let status = try? Sys.status(name, relativeTo: directory, followLinks: false) else { continue }
            // As far in the future counts too: planted, or the clock went back.
            if status.ageNanoseconds > limit || status.ageNanoseconds < -limit { try? Sys.removeFile(name, relativeTo: directory) }
        }
    }
}

/// A file opened for reading, with what `fstat(2)` said of it.
package struct OpenedFile: ~Copyable {
    package let file: OwnedDescriptor
    package let status: FileStatus

    /// The descriptor, for a caller outside this module, which cannot take it apart from its status.
    package consuming func takeFile() -> OwnedDescriptor {
        file
    }
}
