// How Linux tells of changes to files as they happen: inotify(7), one instance for the whole process, read by a
// thread of its own that sleeps in read(2) until the kernel has something to say. Its namesake for Apple
// platforms is in Darwin/DarwinChangeWatch.swift.
#if canImport(Glibc)
import Foundation
import Glibc
import Synchronization

/// Tells of changes to one folder or one file as they happen, without anyone looking: inotify(7) here.
///
/// A folder's watch reports each name made, removed or renamed in it (a file renamed over another included),
/// and each file in it written and closed, or changed in its attributes. A file's watch reports writes, and the
/// file removed, replaced, renamed or changed in its attributes. Each change goes to the watch's `changed`
/// closure on the process's watch thread, never on the caller's: a closure that takes long delays every watch.
/// A watch whose folder or file was removed or moved ends: it says so once, and ``isWatching`` turns false.
/// Changes the kernel could not queue (its queue overflowed) are said to every watch, without a name.
///
/// The watch thread and its inotify descriptor are made with the first watch and kept for the process's life: a
/// thread asleep in a read costs nothing. Where they cannot be made now (the user's inotify instances or this
/// process's descriptors are used up), making a watch throws, and the next one tries again.
final class ChangeWatch: Sendable {
    /// What a watch saw.
    struct Change: Sendable {
        /// The name that changed in a watched folder; nil for a watched file, where the system does not say
        /// (Apple platforms), and when changes were lost.
        var name: String?
        /// Whether the file's bytes were written and nothing else: it was not removed, replaced, renamed or
        /// changed in its attributes, and no change was lost.
        var isWrite: Bool
    }

    /// The kernel's number for the watch (its `wd`), which watches of one folder share.
    fileprivate let number: CInt
    fileprivate let changed: @Sendable (Change) -> Void
    fileprivate let notifier: Notifier
    fileprivate let watching = Atomic<Bool>(true)
    private let cancelled = Atomic<Bool>(false)

    fileprivate init(number: CInt, notifier: Notifier, changed: @escaping @Sendable (Change) -> Void) {
        self.number = number
        self.notifier = notifier
        self.changed = changed
    }

    /// Watches the folder `folder` (a descriptor of it; the watch follows the folder, not its path).
    /// - Throws: the system's error when it cannot watch now (`EMFILE`: no inotify instance or descriptor left;
    ///   `ENOSPC`: no watch left; `ENOENT`: no `/proc` to name the folder by).
    static func folder(_ folder: Descriptor, changed: @escaping @Sendable (Change) -> Void) throws(WormholeError) -> ChangeWatch {
        let mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF
            | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK
        return try Notifier.watch("/proc/self/fd/\(folder.rawValue)", mask: UInt32(mask), changed: changed)
    }

    /// Watches the file `name` in the folder `folder`; a symbolic link there is watched as itself, not followed.
    /// - Throws: as ``folder(_:changed:)``, and `ENOENT` when there is no such file.
    static func file(_ name: String, in folder: Descriptor, changed: @escaping @Sendable (Change) -> Void) throws(WormholeError) -> ChangeWatch {
        let mask = IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
        return try Notifier.watch("/proc/self/fd/\(folder.rawValue)/\(name)", mask: UInt32(mask), changed: changed)
    }

    /// Whether changes are still told: false once the folder or file was removed or moved, or the watch thread
    /// failed.
    var isWatching: Bool { watching.load(ordering: .relaxed) && !cancelled.load(ordering: .relaxed) }

    /// Whether ``cancel()`` was called.
    fileprivate var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Stops the watch. A change being told as it is cancelled may still reach `changed` once; none after that.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        notifier.remove(self)
    }
}

/// The process's inotify instance and the thread that reads it.
private final class Notifier: Sendable {
    /// The one in use; nil until the first watch, and again once its thread failed.
    private static let current = Mutex<Notifier?>(nil)

    private struct Table {
        /// The watches by the kernel's number.
        var watches: [CInt: [ChangeWatch]] = [:]
        /// Set once the thread failed and closed the descriptor: nothing is added any more.
        var ended = false
    }

    /// Blocking: the thread sleeps in its read. Closed only by the thread, under the table's lock, as it ends.
    private let fd: Descriptor
    /// Adding and removing a kernel watch happen under this lock with the table's change, so that the thread
    /// never reads an event of a watch the table does not hold yet, and nothing uses the descriptor once closed.
    private let table = Mutex(Table())

    private init() throws(WormholeError) {
        fd = Descriptor(rawValue: try valueOrErrno("inotify_init1") { inotify_init1(CInt(IN_CLOEXEC)) })
        let thread = Thread { [self] in run() }
        thread.name = "Wormhole watch"
        thread.stackSize = Limits.changeWatchStack
        thread.start()
    }

    /// Adds a kernel watch of `path` with `mask`, and a ``ChangeWatch`` for it.
    static func watch(_ path: String, mask: UInt32, changed: @escaping @Sendable (ChangeWatch.Change) -> Void)
        throws(WormholeError) -> ChangeWatch
    {
        let notifier = try current.withLock { (current) throws(WormholeError) -> Notifier in
            if let current { return current }
            let made = try Notifier()
            current = made
            return made
        }
        return try notifier.table.withLock { (table) throws(WormholeError) -> ChangeWatch in
            guard !table.ended else { throw WormholeError(.system, "the watch thread ended; the next watch starts anew") }
            let number = try valueOrErrno("inotify_add_watch \(path)") {
                path.withCString { inotify_add_watch(notifier.fd.rawValue, $0, mask) }
            }
            let watch = ChangeWatch(number: number, notifier: notifier, changed: changed)
            table.watches[number, default: []].append(watch)
            return watch
        }
    }

    /// Forgets `watch`, and removes its kernel watch once no other watch shares it.
    func remove(_ watch: ChangeWatch) {
        table.withLock { table in
            guard !table.ended, var sharing = table.watches[watch.number] else { return }
            sharing.removeAll { $0 === watch }
            if sharing.isEmpty {
                table.watches[watch.number] = nil
                _ = inotify_rm_watch(fd.rawValue, watch.number)
            } else {
                table.watches[watch.number] = sharing
            }
        }
    }

    /// The thread: reads events as they come and tells each to its watches, until a read fails.
    private func run() {
        // Room for 64 events with names of up to 255 bytes: what a burst of changes in one folder brings at once.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * (16 + 256), alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do throws(WormholeError) {
                count = try fd.readSome(into: buffer)
            } catch {
                return fail()
            }
            guard count > 0 else { return fail() }
            let calls = table.withLock { table in
                Self.changes(in: UnsafeRawBufferPointer(rebasing: buffer[..<count]), &table.watches)
            }
            for (watch, change) in calls where !watch.isCancelled { watch.changed(change) }
        }
    }

    /// Each watch that `events` (`struct inotify_event`s, one after another) concern, and what it saw; watches
    /// that ended leave `watches`.
    private static func changes(in events: UnsafeRawBufferPointer, _ watches: inout [CInt: [ChangeWatch]]) -> [(ChangeWatch, ChangeWatch.Change)] {
        var calls: [(ChangeWatch, ChangeWatch.Change)] = []
        var offset = 0
        // The header: wd, mask, cookie and the length of the name that follows, 4 bytes each.
        while offset + 16 <= events.count {
            let number = events.loadUnaligned(fromByteOffset: offset, as: CInt.self)
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let length = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + 16
            offset = nameStart + length
            guard offset <= events.count else { break }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                for watch in watches.values.joined() { calls.append((watch, ChangeWatch.Change(name: nil, isWrite: false))) }
                continue
            }
            guard let sharing = watches[number] else { continue }
            // The name is padded with zeros to the length.
            let nameBytes = UnsafeRawBufferPointer(rebasing: events[nameStart..<offset]).prefix { $0 != 0 }
            let name = nameBytes.isEmpty ? nil : String(decoding: nameBytes, as: UTF8.self)
            let other = UInt32(IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)
            let change = ChangeWatch.Change(name: name, isWrite: mask & UInt32(IN_MODIFY) != 0 && mask & other == 0)
            for watch in sharing { calls.append((watch, change)) }
            // Removed or moved: a file's watch would follow it, away from the name it watched.
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                for watch in sharing { watch.watching.store(false, ordering: .relaxed) }
            }
            // The kernel dropped the watch (its file went, or it was removed): the number may be given again.
            if mask & UInt32(IN_IGNORED) != 0 { watches[number] = nil }
        }
        return calls
    }

    /// A read failed (nothing here makes one fail): every watch ends, says so, and the next watch made starts
    /// anew.
    private func fail() {
        Self.current.withLock { current in
            if current === self { current = nil }
        }
        let ended = table.withLock { table in
            defer { table = Table(ended: true) }
            fd.close()
            return Array(table.watches.values.joined())
        }
        for watch in ended {
            watch.watching.store(false, ordering: .relaxed)
            if !watch.isCancelled { watch.changed(ChangeWatch.Change(name: nil, isWrite: false)) }
        }
    }
}
#endif
