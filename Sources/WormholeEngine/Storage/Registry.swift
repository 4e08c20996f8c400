import Synchronization

/// The container's registry of listening processes: the folder `registry/`, one file per listener, which only
/// that listener writes (a new file renamed over the old), and which a poster removes once it finds the
/// listener dead. No lock: a rename is atomic, so readers see an entry's old file or its new one.
///
/// Every writer changes `registry.changes` after its rename, so a poster learns of a change with one `pread`
/// and lists the folder only then, re-reading just the entries whose file changed. It looks for itself at
/// least every tenth of a second (the folder's identity and modification time), in case a writer died between
/// its rename and its mark.
///
/// A poster reads the mark at most once per ``Limits/registryTrust``: posts closer together than that share a
/// reading. A writer whose change every later post must see (an observer being added) waits as long after its
/// mark before it returns (``settle()``): a post that begins after that reads the mark again.
final class Registry: Sendable {
    private struct CachedEntry {
        var identity: FileIdentity
        var size: Int
        var modified: Int64
        /// nil when the file is damaged: said once, skipped until it changes.
        var entry: RegistryEntry?
    }

    private struct Cache {
        var loaded = false
        var mark: UInt64 = 0
        var checked: UInt64 = 0
        /// When the mark was last read and found to match the snapshot; 0 after this process wrote.
        var trustedSince: UInt64 = 0
        /// How many changes this process made: a reading begun before one of them earns no trust.
        var changes = 0

        func isTrusted(at now: UInt64) -> Bool {
            trustedSince != 0 && now >= trustedSince && now - trustedSince < Limits.registryTrust.nanoseconds
        }

        /// Trusts the snapshot from `now`, when the mark was read, unless this process changed the registry since.
        mutating func trust(from now: UInt64, unlessChangedSince changesBefore: Int) {
            if changes == changesBefore { trustedSince = max(trustedSince, now) }
        }
        /// When the mark file was last found to be the one at its name.
        var markChecked: UInt64 = 0
        var folder: (identity: FileIdentity, modified: Int64)?
        var files: [String: CachedEntry] = [:]
        var snapshot = RegistrySnapshot.empty
    }

    static let changesName = "registry.changes"

    private let container: Container
    /// Counts an entry skipped because it cannot be read.
    private let skippedEntry: @Sendable () -> Void
    private let cache = Mutex(Cache())
    private let changes: ChangeMark
    /// Until when, in uptime nanoseconds, readers may trust a snapshot from before this process's last change.
    private let trustedUntil = Mutex<UInt64>(0)
    /// How many times this process found the registry changed; tells callers the snapshot changed since.
    let parses = Atomic<Int>(0)

    init(container: Container, skippedEntry: @escaping @Sendable () -> Void) {
        self.container = container
        self.skippedEntry = skippedEntry
        changes = ChangeMark(Self.changesName, in: container.descriptor)
    }

    /// The current registry, re-read only when something changed since the last call. While this process cannot
    /// read it (out of descriptors), its last reading; empty when it never read it (``read()`` says so instead).
    func snapshot() -> RegistrySnapshot {
        (try? read()) ?? .empty
    }

    /// The current registry, re-read only when something changed since the last call. While this process cannot
    /// read it (out of descriptors or memory), its last reading stands, as nothing says otherwise.
    /// - Throws: the system's error when this process never read the registry and cannot now: it cannot tell who
    ///   listens, and a post sent to nobody would look like one that nobody observes.
    /// `now` (uptime nanoseconds) must be taken before the call: a change marked after it is seen once the trust ends.
    func read(now: UInt64 = Sys.uptimeNanoseconds) throws(WormholeError) -> RegistrySnapshot {
        let (trusted, changesBefore) = cache.withLock { cache in (cache.isTrusted(at: now) ? cache.snapshot : nil, cache.changes) }
        if let trusted { return trusted }
        let mark = changes.value
        return try cache.withLock { (cache) throws(WormholeError) in
            // Another thread may have stamped `checked` after this one read the clock: that counts as fresh.
            let age = now > cache.checked ? now - cache.checked : 0
            if cache.loaded && mark != 0 && mark == cache.mark {
                let markAge = now > cache.markChecked ? now - cache.markChecked : 0
                if age < Limits.registryRecheck.nanoseconds && (markAge < Limits.registryMarkRecheck.nanoseconds || changes.isCurrent()) {
                    if markAge >= Limits.registryMarkRecheck.nanoseconds { cache.markChecked = now }
                    cache.trust(from: now, unlessChangedSince: changesBefore)
                    return cache.snapshot
                }
                if age >= Limits.registryRecheck.nanoseconds, let folder = folderState(), let cached = cache.folder, folder == cached,
                    changes.isCurrent()
                {
                    cache.checked = now
                    cache.markChecked = now
                    cache.trust(from: now, unlessChangedSince: changesBefore)
                    return cache.snapshot
                }
            }
            // No mark to go by (missing, damaged, or of more than one link until a writer replaces it): the folder's
            // own modification time tells, once it is older than the file system's clock can blur.
            if cache.loaded && mark == 0 && cache.mark == 0, let folder = folderState(), let cached = cache.folder,
                folder == cached
            {
                return cache.snapshot
            }
            if !changes.isCurrent() { changes.reopen() }
            // This process cannot read the registry now (out of descriptors): its last reading stands, as nothing
            // says otherwise, and the next call looks again.
            if let failure = reload(&cache) {
                guard cache.loaded else { throw failure }
                return cache.snapshot
            }
            cache.mark = mark
            cache.checked = now
            cache.markChecked = now
            // Trusted only when a mark told what was read: without one, every call looks.
            if mark != 0 { cache.trust(from: now, unlessChangedSince: changesBefore) }
            return cache.snapshot
        }
    }

    private func folderState() -> (identity: FileIdentity, modified: Int64)? {
        guard let status = try? container.registryDescriptor.status() else { return nil }
        return (status.identity, status.modifiedNanoseconds)
    }

    /// Lists the folder and reads the entries whose file is new or changed. Returns the system's error, with
    /// `cache` as it was, when this process cannot tell what the folder holds now: it is out of descriptors (or
    /// memory) to list it or to open an entry. That is not an entry lost, nor a damaged one. Nil once read.
    private func reload(_ cache: inout Cache) -> WormholeError? {
        // A folder changed within the last moments may change again within the same tick of its clock, unseen:
        // its state is kept, to skip later listings, only once it is settled.
        let folder = folderState().flatMap { nanosecondsSince($0.modified) > Limits.registryEntrySettled.signedNanoseconds ? $0 : nil }
        let directory = container.registryDescriptor
        let names: [String]
        do throws(WormholeError) {
            names = try Sys.listDirectory(directory, limit: 4 * Limits.maximumListeners)
        } catch where error.isOutOfResources {
            return error
        } catch {
            names = []
        }
        var files: [String: CachedEntry] = [:]
        var changed = !cache.loaded
        for name in names where FileName.value(ofHex: name) != nil {
            guard let status = try? Sys.status(name, relativeTo: directory, followLinks: false) else { continue }
            let identity = status.identity, size = status.size, modified = status.modifiedNanoseconds
            // A file changed within the last moments may share inode, size and (coarse) time with the one read
            // before it: read it again, as git does with "racily clean" files.
            let settled = status.ageNanoseconds > Limits.registryEntrySettled.signedNanoseconds
            if settled, let old = cache.files[name], old.identity == identity, old.size == size, old.modified == modified {
                files[name] = old
                continue
            }
            changed = true
            let entry: RegistryEntry?
            do throws(WormholeError) {
                entry = try readEntry(name)
            } catch {
                return error
            }
            files[name] = CachedEntry(identity: identity, size: size, modified: modified, entry: entry)
        }
        if files.count != cache.files.count { changed = true }
        cache.folder = folder
        cache.files = files
        cache.loaded = true
        guard changed else { return nil }
        let entries = files.keys.sorted().compactMap { files[$0]?.entry }
        cache.snapshot = RegistrySnapshot(entries: entries, generation: parses.add(1, ordering: .relaxed).newValue)
        return nil
    }

    /// One entry file, checked; nil (said and counted) when it is damaged, of another type, or too large, and
    /// when it is gone.
    /// - Throws: the system's error when this process is out of descriptors or memory to read it: it cannot tell.
    private func readEntry(_ name: String) throws(WormholeError) -> RegistryEntry? {
        do throws(WormholeError) {
            let bytes = try StoredFile.read(name, in: container.registryDescriptor, limit: Limits.maximumRegistryEntrySize)
            let entry = try RegistryFormat.decodeEntry(bytes)
            guard FileName.value(ofHex: name) == entry.listener else {
                throw WormholeError(.corruptData, "registry entry \(name) names listener \(FileName.hex(entry.listener))")
            }
            return entry
        } catch where error.systemErrno == .noSuchFile {
            return nil
        } catch where error.isOutOfResources {
            throw error
        } catch {
            skippedEntry()
            Log.warning("registry entry \(name) in \(container.path) is unreadable, skipping it: \(error)")
            return nil
        }
    }

    /// Writes a listener's own entry (replacing its file whole) and tells every reader.
    /// - Throws: ``WormholeError/Code/payloadTooLarge`` when the entry is over ``Limits/maximumRegistryEntrySize``.
    func write(_ entry: RegistryEntry) throws(WormholeError) {
        let bytes = RegistryFormat.encode(entry)
        guard bytes.count <= Limits.maximumRegistryEntrySize else {
            throw WormholeError(.payloadTooLarge, "registry entry of \(bytes.count) bytes is over \(Limits.maximumRegistryEntrySize)")
        }
        StopPoint.reached("registry.write")
        try StoredFile.replace(entry.fileName, in: container.registryDescriptor, with: bytes)
        markChanged()
    }

    /// Removes a listener's entry; a missing one is not an error.
    func remove(_ listener: UInt64) {
        try? Sys.removeFile(FileName.hex(listener), relativeTo: container.registryDescriptor)
        markChanged()
    }

    /// Tells every reader of a change: this process's next snapshot looks, and others' once their trust ends
    /// (``Limits/registryTrust``, and ``Limits/registryMarkRecheck`` more when the mark file had to be made anew, which readers
    /// keeping the old one open notice only when they check its name).
    private func markChanged() {
        let inPlace = changes.touch()
        cache.withLock { cache in
            cache.trustedSince = 0
            cache.changes += 1
        }
        let until = Sys.uptimeNanoseconds + (inPlace ? 0 : Limits.registryMarkRecheck.nanoseconds) + Limits.registryTrust.nanoseconds
        trustedUntil.withLock { $0 = max($0, until) }
    }

    /// Returns once every reader trusts no snapshot read before this process's last change: a post that begins
    /// afterwards, in any process, sees the change.
    func settle() {
        let until = trustedUntil.withLock { $0 }
        while case let now = Sys.uptimeNanoseconds, now < until {
            Sys.sleep(nanoseconds: until - now)
        }
    }

    /// The entry of `listener` as its file holds it now, without the cache; nil when it has none (or a damaged one).
    /// - Throws: the system's error when this process is out of descriptors or memory to read it: it cannot tell.
    func currentEntry(_ listener: UInt64) throws(WormholeError) -> RegistryEntry? {
        try readEntry(FileName.hex(listener))
    }

    /// Removes temporary files left by writers that died between writing and renaming.
    func removeStaleTemporaries() {
        StoredFile.removeStaleTemporaries(in: container.registryDescriptor)
    }
}
