import Foundation

/// The shared directory of a group, opened and checked: a directory of this user's, writable by nobody else.
///
/// Layout (version ``layoutVersion``, recorded in the file `layout`):
/// `registry/<id>` (one entry per listener), `registry.changes`, `listeners/<id>.socket`, `spool/<id>/` (one folder
/// per listener), `retained/<name>`, `values/<name>/` (one folder per group value). No file in it is ever locked.
package final class Container: Sendable {
    /// The version of the container's layout; a process of another version refuses the container.
    static let layoutVersion = 5
    static let layoutName = "layout"

    package let path: String
    package let listenersPath: String
    package let retainedPath: String
    /// The directory this container opened, to notice when its path names another one.
    package let identity: FileIdentity
    /// The container's folder and the folders in it, open as long as the container is.
    private let root: OwnedDescriptor
    private let listeners: OwnedDescriptor
    private let spool: OwnedDescriptor
    private let registry: OwnedDescriptor
    private let retained: OwnedDescriptor
    private let values: OwnedDescriptor

    package var descriptor: Descriptor { root.descriptor }
    package var listenersDescriptor: Descriptor { listeners.descriptor }
    package var spoolDescriptor: Descriptor { spool.descriptor }
    package var registryDescriptor: Descriptor { registry.descriptor }
    package var retainedDescriptor: Descriptor { retained.descriptor }
    package var valuesDescriptor: Descriptor { values.descriptor }

    /// Opens (creating it 0700 if it is missing) and checks the container at `path`.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when it is not a usable directory, and
    ///   ``WormholeError/Code/insecureContainer`` when another user owns it or group or others may write it.
    package init(path rawPath: String) throws(WormholeError) {
        let path = rawPath.count > 1 && rawPath.hasSuffix("/") ? String(rawPath.dropLast()) : rawPath
        guard !path.isEmpty else { throw WormholeError(.invalidContainer, "container path is empty") }
        self.path = path
        listenersPath = path + "/listeners"
        retainedPath = path + "/retained"
        // What is open when a later step throws closes as the half-made container goes.
        root = try Self.openDirectory(path, relativeTo: Descriptor.currentDirectory, create: true, what: "container")
        Sys.keepReadableWhileLocked(path)
        try Self.checkLayout(root.descriptor, path)
        identity = try root.descriptor.status().identity
        registry = try Self.openDirectory("registry", relativeTo: root.descriptor, create: true, what: "container")
        listeners = try Self.openDirectory("listeners", relativeTo: root.descriptor, create: true, what: "container")
        spool = try Self.openDirectory("spool", relativeTo: root.descriptor, create: true, what: "container")
        retained = try Self.openDirectory("retained", relativeTo: root.descriptor, create: true, what: "container")
        values = try Self.openDirectory("values", relativeTo: root.descriptor, create: true, what: "container")
    }

    /// Whether the container's path still names the directory this process opened (not moved, removed or
    /// recreated since).
    package var isAtItsPath: Bool {
        guard let status = try? Sys.status(path) else { return false }
        return status.identity == identity
    }

    /// Whether a container with a layout exists at `path`: read-only tools look before opening, so that they
    /// create nothing.
    package static func exists(at path: String) -> Bool {
        guard !path.isEmpty, let root = try? Sys.open(path, .directory) else { return false }
        return (try? Sys.status(layoutName, relativeTo: root.descriptor, followLinks: false)) != nil
    }

    /// Reads the layout version, writing it into a new container; refuses a container of another layout.
    private static func checkLayout(_ root: Descriptor, _ path: String) throws(WormholeError) {
        let expected = Array("wormhole layout \(layoutVersion)\n".utf8)
        for _ in 0..<3 {
            do throws(WormholeError) {
                let found = try StoredFile.read(layoutName, in: root, limit: 256)
                guard found == expected else {
                    // Printable ASCII only: the file's bytes reach a terminal.
                    let text = String(decoding: found.prefix(64).filter { (0x20..<0x7f).contains($0) }, as: UTF8.self)
                    throw WormholeError(
                        .incompatibleContainer,
                        "container \(path) has layout \"\(text)\"; this Wormhole uses layout \(layoutVersion)")
                }
                return
            } catch where error.systemErrno == .noSuchFile {
                if let old = try? Sys.status("registry", relativeTo: root, followLinks: false), old.isRegularFile {
                    throw WormholeError(
                        .incompatibleContainer,
                        "container \(path) was made by an older Wormhole (layout 2); remove it or use another folder")
                }
                if try StoredFile.create(layoutName, in: root, with: expected) { return }
            }
        }
        throw WormholeError(.incompatibleContainer, "container \(path) has no readable layout file")
    }

    /// Opens a directory, creating it 0700 when asked, and refuses one that is not this user's alone.
    package static func openDirectory(_ path: String, relativeTo directory: Descriptor, create: Bool, what: String)
        throws(WormholeError) -> OwnedDescriptor
    {
        let shown = directory == Descriptor.currentDirectory ? path : "\(what) folder \(path)"
        if create {
            do throws(WormholeError) {
                try Sys.makeDirectory(path, 0o700, relativeTo: directory)
            } catch where error.systemErrno == .fileExists {
            } catch where error.systemErrno == .noSuchFile {
                throw WormholeError(.invalidContainer, "the folder that should hold \(shown) does not exist")
            } catch {
                throw WormholeError(.invalidContainer, "cannot create \(shown)", errno: error.errno)
            }
        }
        // The container itself may be reached through a symbolic link; the folders inside it may not.
        let options: OpenOptions = directory == Descriptor.currentDirectory ? .directory : [.directory, .noFollow]
        let opened: OwnedDescriptor
        do throws(WormholeError) {
            opened = try Sys.open(path, options, relativeTo: directory)
        } catch where error.systemErrno == Errno.notDirectory || error.systemErrno == Errno.symbolicLink {
            throw WormholeError(.invalidContainer, "\(shown) is not a directory")
        } catch {
            throw WormholeError(.invalidContainer, "cannot open \(shown)", errno: error.errno)
        }
        let status = try opened.descriptor.status()
        guard status.isDirectory else {
            throw WormholeError(.invalidContainer, "\(shown) is not a directory")
        }
        guard status.owner == Sys.effectiveUserID else {
            throw WormholeError(.insecureContainer, "\(shown) is owned by user \(status.owner), not by this user (\(Sys.effectiveUserID))")
        }
        if status.isWritableByGroup {
            throw WormholeError(.insecureContainer, "\(shown) is writable by group; run chmod go-w on it")
        }
        if status.isWritableByOthers {
            throw WormholeError(.insecureContainer, "\(shown) is writable by others; run chmod go-w on it")
        }
        do throws(WormholeError) {
            try Sys.checkWriteAndSearch(opened.descriptor)
        } catch {
            throw WormholeError(.invalidContainer, "\(shown) is not writable", errno: error.errno)
        }
        return opened
    }

    /// The default container of a group: `$WORMHOLE_CONTAINER_ROOT/<group>`, else
    /// `$XDG_RUNTIME_DIR/wormhole/<group>`, else `<tmp>/wormhole-<uid>/<group>`; on Apple platforms a `Wormhole`
    /// folder inside the App Group's container.
    package static func defaultPath(forGroup group: String, create: Bool = true) throws(WormholeError) -> String {
        guard !group.isEmpty, group != ".", group != "..", !group.contains("/"), !group.contains("\0") else {
            throw WormholeError(.invalidContainer, "group identifier \"\(group)\" cannot name a folder")
        }
        if Sys.hasAppGroupContainers {
            guard let container = Sys.appGroupContainerPath(group) else {
                throw WormholeError(.invalidContainer, "no App Group container for \(group); check the entitlement")
            }
            return container + "/Wormhole"
        }
        let environment = ProcessInfo.processInfo.environment
        if let root = environment["WORMHOLE_CONTAINER_ROOT"], !root.isEmpty {
            return root + "/" + group
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            if create { try ensurePrivateDirectory(runtime + "/wormhole") }
            return runtime + "/wormhole/" + group
        }
        let temporary = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let root = temporary + "/wormhole-\(Sys.effectiveUserID)"
        if create { try ensurePrivateDirectory(root) }
        return root + "/" + group
    }

    /// Creates `path` 0700 if missing and checks that it is this user's alone, so nobody can plant a container.
    private static func ensurePrivateDirectory(_ path: String) throws(WormholeError) {
        _ = try openDirectory(path, relativeTo: Descriptor.currentDirectory, create: true, what: "container root")
    }
}
