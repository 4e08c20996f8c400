/// A folder of the container, open by descriptor, for a library beside the core (the relay) that keeps files of
/// its own there: nothing reached through it is reached through a symbolic link.
///
/// - Each folder on the way is opened relative to the one above it with `O_DIRECTORY | O_NOFOLLOW`, made 0700
///   when missing, and checked as the container's own folders are (``Container/openDirectory(_:relativeTo:create:what:)``):
///   a link, anything but a directory, or a folder not this user's alone is refused.
/// - Files are read as ``StoredFile`` reads them (`O_NOFOLLOW | O_NONBLOCK`, a regular file within a limit) and
///   replaced as it writes them: a new file, `O_EXCL | O_NOFOLLOW`, 0600, renamed over the old one.
/// - An entry that is not a regular file (a folder, a link, a FIFO: never one a writer here made) is never removed
///   nor written through: ``remove(_:)`` removes regular files only, and where a file is to be written, such an
///   entry is first moved aside, to `<name>.moved-<16 hex>`, where it stays.
package final class ContainerFolder: Sendable {
    /// Which folder it is: its device and inode, the same whichever path reached it.
    package struct FolderIdentity: Hashable, Sendable {
        package let device: UInt64
        package let inode: UInt64
    }

    /// Where the folder was when it was opened, for messages.
    package let path: String
    package let identity: FolderIdentity
    private let folder: OwnedDescriptor

    private init(_ descriptor: consuming OwnedDescriptor, path: String) throws(WormholeError) {
        let status = try descriptor.descriptor.status()
        identity = FolderIdentity(device: status.identity.device, inode: status.identity.inode)
        self.path = path
        self.folder = descriptor
    }

    /// The folder of `container` itself, open anew.
    package convenience init(of container: Container) throws(WormholeError) {
        try self.init(try Sys.open(".", .directory, relativeTo: container.descriptor), path: container.path)
    }

    /// The folder `name` in this one, made 0700 when missing and `create` is true.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when `name` is missing (and not to be made), a symbolic
    ///   link or not a directory, or is not a single name; ``WormholeError/Code/insecureContainer`` when another
    ///   user owns it or group or others may write it.
    package func folder(_ name: String, create: Bool) throws(WormholeError) -> ContainerFolder {
        try check(name)
        let opened = try Container.openDirectory(name, relativeTo: folder.descriptor, create: create, what: path)
        return try ContainerFolder(opened, path: path + "/" + name)
    }

    /// The bytes of the file `name`; nil when nothing has that name.
    /// - Throws: ``WormholeError/Code/corruptData`` when it is not a regular file (a link, a FIFO, a folder) or
    ///   is larger than `limit`; a system error when it cannot be read.
    package func read(_ name: String, limit: Int) throws(WormholeError) -> [UInt8]? {
        try check(name)
        do throws(WormholeError) {
            return try StoredFile.read(name, in: folder.descriptor, limit: limit)
        } catch where error.systemErrno == .noSuchFile {
            return nil
        } catch where error.systemErrno == .symbolicLink {
            throw WormholeError(.corruptData, "\(path)/\(name) is a symbolic link")
        }
    }

    /// Replaces the file `name` with one holding `bytes` (made 0600): a reader sees the old file or the new one.
    /// Returns the name that what was there moved to, when it was not a regular file; nil otherwise.
    @discardableResult
    package func replace(_ name: String, with bytes: [UInt8]) throws(WormholeError) -> String? {
        try check(name)
        let moved = try moveAsideUnlessRegularFile(name)
        try StoredFile.replace(name, in: folder.descriptor, with: bytes)
        return moved
    }

    /// The names in the folder, less `.` and `..`.
    package func names() throws(WormholeError) -> [String] {
        try Sys.listDirectory(folder.descriptor)
    }

    /// Whether `name` is a regular file (a link is not followed); nil when nothing has that name.
    package func isRegularFile(_ name: String) -> Bool? {
        guard (try? check(name)) != nil,
            let status = try? Sys.status(name, relativeTo: folder.descriptor, followLinks: false)
        else { return nil }
        return status.isRegularFile
    }

    /// Removes the file `name`.
    /// - Throws: ``WormholeError/Code/corruptData``, and leaves it, when it is not a regular file; `ENOENT` as a
    ///   system error when nothing has that name.
    package func remove(_ name: String) throws(WormholeError) {
        try check(name)
        let status = try Sys.status(name, relativeTo: folder.descriptor, followLinks: false)
        guard status.isRegularFile else { throw WormholeError(.corruptData, "\(path)/\(name) is not a regular file; left in place") }
        try Sys.removeFile(name, relativeTo: folder.descriptor)
    }

    /// Removes the temporary files of writes cut short (``StoredFile/temporaryPrefix``), whatever their age:
    /// for a folder only one writer uses, which has just started.
    package func removeTemporaries() {
        guard let names = try? names() else { return }
        for name in names where name.hasPrefix(StoredFile.temporaryPrefix) {
            try? remove(name)
        }
    }

    /// Opens the file `name` to append to it, making it (0600) when it is missing. What is there and is not a
    /// regular file with a single link (a link, a FIFO, a folder, a file linked elsewhere) is moved aside first
    /// (and said in `movedAside`).
    package func openForAppending(_ name: String) throws(WormholeError) -> (file: AppendedFile, movedAside: String?) {
        try check(name)
        var movedAside: String? = nil
        for _ in 0..<4 {
            do throws(WormholeError) {
                // Non-blocking: a FIFO fails at once (no reader) or opens and is refused, never waited on.
                let file = try Sys.open(name, [.writeOnly, .noFollow, .nonBlocking], relativeTo: folder.descriptor)
                let status = try file.descriptor.status()
                if status.isRegularFile && status.linkCount == 1 {
                    return (AppendedFile(file, end: status.size), movedAside)
                }
            } catch where error.systemErrno == .noSuchFile {
                do throws(WormholeError) {
                    let file = try Sys.open(
                        name, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600, relativeTo: folder.descriptor)
                    return (AppendedFile(file, end: 0), movedAside)
                } catch where error.systemErrno == .fileExists {
                    continue
                }
            } catch {
                // A link (ELOOP), a FIFO nobody reads (ENXIO), a folder (EISDIR) are moved aside; a file of its own
                // that cannot be opened is an error of its own.
                let status = try? Sys.status(name, relativeTo: folder.descriptor, followLinks: false)
                if let status, status.isRegularFile, status.linkCount == 1 { throw error }
            }
            // Gone meanwhile, or replaced by a file of its own: opened again.
            guard let status = try? Sys.status(name, relativeTo: folder.descriptor, followLinks: false) else { continue }
            if status.isRegularFile && status.linkCount == 1 { continue }
            movedAside = try moveAside(name)
        }
        throw WormholeError(.corruptData, "\(path)/\(name) keeps being replaced by something other than a file")
    }

    /// A file open for appending (``openForAppending(_:)``): each append is one write at its end.
    package final class AppendedFile {
        private let file: OwnedDescriptor
        private var end: Int

        fileprivate init(_ file: consuming OwnedDescriptor, end: Int) {
            self.file = file
            self.end = end
        }

        /// Writes `bytes` at the end of the file, in one write as far as the system allows.
        package func append(_ bytes: [UInt8]) throws(WormholeError) {
            let at = end
            let fd = file.descriptor
            try bytes.withRawBytes { (raw) throws(WormholeError) in try fd.writeAll(raw, at: at) }
            end += bytes.count
        }

        /// Empties the file; it stays open for the next append.
        package func empty() throws(WormholeError) {
            try file.descriptor.truncate(to: 0)
            end = 0
        }
    }

    /// Moves what `name` holds aside when it is anything but a regular file; returns the name it moved to.
    private func moveAsideUnlessRegularFile(_ name: String) throws(WormholeError) -> String? {
        guard let status = try? Sys.status(name, relativeTo: folder.descriptor, followLinks: false), !status.isRegularFile
        else { return nil }
        return try moveAside(name)
    }

    /// Renames `name` (whatever it is; a link is renamed, not followed) to `<name>.moved-<16 hex>`.
    private func moveAside(_ name: String) throws(WormholeError) -> String {
        let aside = name + ".moved-" + FileName.hex(UInt64.random(in: 1...UInt64.max))
        try Sys.renameFile(name, aside, in: folder.descriptor)
        return aside
    }

    /// Refuses a name that is not one entry of this folder: empty, `.`, `..`, with a `/` or a NUL (`openat(2)`
    /// follows links in every component but the last).
    private func check(_ name: String) throws(WormholeError) {
        guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(0x2f), !name.utf8.contains(0), name.utf8.count <= 255
        else { throw WormholeError(.invalidContainer, "\"\(name)\" does not name one entry of \(path)") }
    }
}
