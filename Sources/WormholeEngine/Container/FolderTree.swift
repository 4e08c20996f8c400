/// A folder and everything in it, removed without following a link anywhere: each folder is opened beneath its
/// parent's descriptor with `O_NOFOLLOW`, and a link found inside is removed as the link it is. For a folder the
/// caller made and owns (the demo's temporary container), never for a user's container.
package enum FolderTree {
    /// Removes the folder at `path` and all it holds, at most `depth` folders deep; what cannot be removed (a
    /// deeper tree, an entry that vanished or that another process holds) stays, and the first failure is thrown.
    package static func remove(atPath path: String, depth: Int = 32) throws(WormholeError) {
        let folder = try Sys.open(path, [.directory, .noFollow])
        try removeContents(of: folder.descriptor, depth: depth)
        folder.close()
        try Sys.removeDirectory(path, relativeTo: .currentDirectory)
    }

    private static func removeContents(of folder: Descriptor, depth: Int) throws(WormholeError) {
        for name in try Sys.listDirectory(folder) {
            let status = try Sys.status(name, relativeTo: folder, followLinks: false)
            guard status.isDirectory else {
                try Sys.removeFile(name, relativeTo: folder)
                continue
            }
            guard depth > 0 else { throw WormholeError(.invalidContainer, "\(name) is nested too deep to remove") }
            let inner = try Sys.open(name, [.directory, .noFollow], relativeTo: folder)
            try removeContents(of: inner.descriptor, depth: depth - 1)
            inner.close()
            try Sys.removeDirectory(name, relativeTo: folder)
        }
    }
}
