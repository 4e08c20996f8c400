// How Apple platforms tell of changes to files as they happen: a dispatch source on a descriptor of the folder or
// file (kqueue's vnode filter, EVFILT_VNODE, underneath), opened for events only (O_EVTONLY), so that it keeps
// no volume from being unmounted. Its namesake for Linux is in Linux/LinuxChangeWatch.swift. Written from Apple's
// documentation (dispatch_source_create, DISPATCH_SOURCE_TYPE_VNODE, open(2)); this Linux machine type-checks it
// against Apple's SDKs but cannot run it.
#if canImport(Darwin)
import Darwin
import Dispatch
import Synchronization

/// Tells of changes to one folder or one file as they happen, without anyone looking: a dispatch source of the
/// vnode type here.
///
/// A folder's watch reports that a name was made, removed or renamed in it, without saying which (kqueue does
/// not). A file's watch reports writes, and the file removed, renamed or changed in its attributes or links.
/// Each change goes to the watch's `changed` closure on a serial dispatch queue of the library's, never on the
/// caller's thread. A watch whose folder or file was removed or moved ends: it says so once, and ``isWatching``
/// turns false.
final class ChangeWatch: Sendable {
    /// What a watch saw.
    struct Change: Sendable {
        /// The name that changed in a watched folder; nil for a watched file, where the system does not say
        /// (here, always), and when changes were lost.
        var name: String?
        /// Whether the file's bytes were written and nothing else: it was not removed, replaced, renamed or
        /// changed in its attributes, and no change was lost.
        var isWrite: Bool
    }

    /// The queue every watch's `changed` runs on.
    private static let queue = DispatchQueue(label: "Wormhole watch")

    private let source: WatchSource
    private let watching = Atomic<Bool>(true)

    private init(
        _ fd: consuming OwnedDescriptor, _ mask: DispatchSource.FileSystemEvent, isFolder: Bool,
        changed: @escaping @Sendable (Change) -> Void
    ) {
        let raw = fd.release()
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: raw.rawValue, eventMask: mask, queue: Self.queue)
        self.source = WatchSource(source)
        source.setEventHandler { [weak self, weak source] in
            guard let self, let source, !source.isCancelled else { return }
            let events = source.data
            // Removed, renamed or revoked: the descriptor no longer stands for what is at the name.
            if !events.isDisjoint(with: [.delete, .rename, .revoke]) {
                self.watching.store(false, ordering: .relaxed)
                source.cancel()
            }
            changed(Change(name: nil, isWrite: !isFolder && events.isSubset(of: [.write, .extend])))
        }
        // The descriptor stays open until the source is done with it.
        source.setCancelHandler { raw.close() }
        source.activate()
    }

    /// Watches the folder `folder` (a descriptor of it, opened again for events only; the watch follows the
    /// folder, not its path).
    /// - Throws: the system's error when it cannot watch now (`EMFILE`: no descriptor left).
    static func folder(_ folder: Descriptor, changed: @escaping @Sendable (Change) -> Void) throws(WormholeError) -> ChangeWatch {
        let fd = try Sys.open(".", [.directory, OpenOptions(rawValue: O_EVTONLY)], relativeTo: folder)
        return ChangeWatch(fd, [.write, .delete, .rename, .revoke], isFolder: true, changed: changed)
    }

    /// Watches the file `name` in the folder `folder`; a symbolic link there is refused, not followed.
    /// - Throws: as ``folder(_:changed:)``, and `ENOENT` when there is no such file.
    static func file(_ name: String, in folder: Descriptor, changed: @escaping @Sendable (Change) -> Void) throws(WormholeError) -> ChangeWatch {
        let fd = try Sys.open(name, [.noFollow, OpenOptions(rawValue: O_EVTONLY)], relativeTo: folder)
        return ChangeWatch(
            fd, [.write, .extend, .attrib, .link, .delete, .rename, .revoke], isFolder: false, changed: changed)
    }

    /// Whether changes are still told: false once the folder or file was removed or moved.
    var isWatching: Bool { watching.load(ordering: .relaxed) && !source.source.isCancelled }

    /// Stops the watch. A change being told as it is cancelled may still reach `changed` once; none after that.
    func cancel() {
        source.source.cancel()
    }

    deinit {
        source.source.cancel()
    }
}

/// A watch's dispatch source.
/// Safe because the source is set up before it is shared, and `DispatchSource` is thread-safe after that.
private final class WatchSource: @unchecked Sendable {
    let source: any DispatchSourceFileSystemObject

    init(_ source: any DispatchSourceFileSystemObject) {
        self.source = source
    }
}
#endif
