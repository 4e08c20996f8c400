#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// The container's registry of listening processes: the file `registry`, replaced whole by write-to-temporary
/// and `rename(2)` under an exclusive `flock(2)` on `registry.lock`.
///
/// Readers take no lock: a rename is atomic, so they see the old file or the new one, never a torn one.
/// A reader keeps the file it parsed open, so its inode cannot be reused, and re-reads only when `stat(2)`
/// of the path shows another inode. It calls `stat` only when the counter in `registry.generation`, which
/// every writer increments after its rename, moved, or at least every tenth of a second: a post costs no
/// system call for the registry.
final class Registry: Sendable {
    private struct Cache: ~Copyable {
        var file: OwnedDescriptor?
        var inode: UInt64 = 0
        var device: UInt64 = 0
        var snapshot = RegistrySnapshot.empty
        /// The shared counter's value, and the time, of the last `stat`.
        var generation: UInt64 = 0
        var checked: UInt64 = 0
    }

    static let fileName = "registry"
    static let lockName = "registry.lock"
    static let temporaryName = "registry.tmp"
    static let generationName = "registry.generation"
    /// How long a reader trusts an unchanged counter before it calls `stat` anyway, in nanoseconds.
    static let recheckInterval: UInt64 = 100_000_000
    static let maximumFileSize = 16 << 20

    private let container: Container
    private let cache = Mutex(Cache())
    /// nil when the counter's file cannot be mapped: then every snapshot calls `stat`.
    private let generation: SharedCounter?
    /// How many times this process parsed the registry file; posting re-parses only after a change. Also tells
    /// callers that the snapshot changed since they last looked.
    let parses = Atomic<Int>(0)

    init(container: Container) {
        self.container = container
        generation = try? SharedCounter(file: Self.generationName, in: container.descriptor)
    }

    /// The current registry, re-read only when the file was replaced since the last call.
    func snapshot() -> RegistrySnapshot {
        let counter = generation?.value
        let now = DispatchTime.now().uptimeNanoseconds
        let cached = cache.withLock { cache -> RegistrySnapshot? in
            // Another thread may have stamped `checked` after this one read the clock: that counts as fresh.
            let age = now > cache.checked ? now - cache.checked : 0
            guard let counter, cache.file != nil, counter == cache.generation, age < Self.recheckInterval else {
                cache.generation = counter ?? 0
                cache.checked = now
                return nil
            }
            return cache.snapshot
        }
        if let cached { return cached }
        let directory = container.descriptor
        guard let status = try? Sys.status(Self.fileName, relativeTo: directory) else {
            return cache.withLock { cache in
                cache.file = nil
                cache.snapshot = .empty
                return .empty
            }
        }
        return cache.withLock { cache in
            if cache.file != nil, UInt64(status.st_ino) == cache.inode, UInt64(status.st_dev) == cache.device {
                return cache.snapshot
            }
            // Replaced or removed between the stat and the open: the next post looks again.
            guard let fd = try? Sys.open(Self.fileName, O_RDONLY | O_NOFOLLOW, relativeTo: directory).release() else {
                cache.file = nil
                cache.snapshot = .empty
                return .empty
            }
            let file = OwnedDescriptor(rawValue: fd)
            guard let opened = try? Sys.status(of: fd) else {
                cache.file = nil
                cache.snapshot = .empty
                return .empty
            }
            parses.add(1, ordering: .relaxed)
            do throws(WormholeError) {
                let bytes = try readWhole(file.rawValue, limit: Self.maximumFileSize)
                cache.snapshot = RegistrySnapshot(entries: try Self.decode(bytes))
            } catch {
                // Said once per file: a corrupt file stays cached as empty until a writer replaces it.
                Log.warning("registry in \(container.path) is unreadable, treating it as empty: \(error)")
                cache.snapshot = .empty
            }
            cache.inode = UInt64(opened.st_ino)
            cache.device = UInt64(opened.st_dev)
            cache.file = consume file
            return cache.snapshot
        }
    }

    /// Changes the registry under its lock: reads the current file, lets `body` edit the entries, and
    /// replaces the file atomically. A corrupt registry is rebuilt from nothing; live listeners add themselves
    /// back within a second.
    func update<R>(_ body: (inout [RegistryEntry]) throws(WormholeError) -> R) throws(WormholeError) -> R {
        let directory = container.descriptor
        let lock = try Sys.open(Self.lockName, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600, relativeTo: directory)
        return try Sys.withExclusiveLock(lock.rawValue) { () throws(WormholeError) -> R in
            var entries: [RegistryEntry]
            do throws(WormholeError) {
                let bytes = try readSmallFile(Self.fileName, relativeTo: directory, limit: Self.maximumFileSize)
                entries = try Self.decode(bytes)
            } catch where error.errno == ENOENT {
                entries = []
            } catch {
                Log.warning("registry in \(container.path) is corrupt, rebuilding it: \(error)")
                entries = []
            }
            let original = entries
            let result = try body(&entries)
            if entries != original {
                try write(entries, in: directory)
                generation?.increment()
            }
            return result
        }
    }

    private func write(_ entries: [RegistryEntry], in directory: CInt) throws(WormholeError) {
        let bytes = RegistryFormat.encode(entries)
        let temporary = try Sys.open(
            Self.temporaryName, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600, relativeTo: directory)
        try bytes.withRawBytes { (raw) throws(WormholeError) in try Sys.pwriteAll(temporary.rawValue, raw, at: 0) }
        temporary.close()
        try Sys.renameFile(Self.temporaryName, Self.fileName, in: directory)
    }

    private static func decode(_ bytes: [UInt8]) throws(WormholeError) -> [RegistryEntry] {
        try RegistryFormat.decode(bytes)
    }
}
