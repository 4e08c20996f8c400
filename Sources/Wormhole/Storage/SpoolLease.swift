
/// A poster's reservation of room in one listener's spool, so that the listener's cap holds when many posters
/// spool at once, without a lock and without any poster waiting for another.
///
/// The reservation is the file `lease-<poster>` in the spool folder: its *size* (a sparse file, holding no
/// blocks) is what the poster may still write there. Before it writes a record a poster renews its lease when it
/// has none, when what is left is too small, or when it is older than ``Limits/leaseRenewal``: it first sets the file's size
/// to what it asks for, *then* measures the folder (the segments waiting, plus the fresh leases of the other
/// posters). Of two posters renewing at once, the one that measures last sees the other's lease, so together they
/// never pass the cap. What a poster writes comes off its local ``remaining``; the file keeps the size set at the
/// renewal, so written bytes count twice (in the segment and in the lease) until the next one: erring on the safe side.
///
/// A lease not renewed for ``Limits/leaseLifetime`` (its poster died, or is stopped) is stale: measurements ignore it and remove
/// it, so it never blocks the others. A poster stopped with a lease comes back to renew before it writes more than
/// the record it was writing, so the cap can be passed only by that record, for each poster stopped for longer
/// than ``Limits/leaseLifetime`` between renewing and finishing a write.
struct SpoolLease: ~Copyable {

    let name: String
    let file: OwnedDescriptor
    let identity: FileIdentity
    /// Bytes reserved and not written yet.
    var remaining = 0
    /// When the lease was last renewed, in uptime nanoseconds; 0 before the first renewal.
    var renewed: UInt64 = 0
    /// Bytes written under the lease since it was last renewed: the next renewal asks for about twice that, so a
    /// poster that spools little reserves little, and many posters at once do not refuse each other.
    var spent = 0

    /// Takes `size` bytes out of what is left, when that much is left and the lease was renewed within
    /// ``Limits/leaseRenewal`` before `now` (uptime nanoseconds); false when it must be renewed first.
    mutating func spend(_ size: Int, at now: UInt64) -> Bool {
        guard renewed != 0, now &- renewed <= Limits.leaseRenewal.nanoseconds, remaining >= size else { return false }
        remaining -= size
        spent += size
        return true
    }

    static func name(poster: UInt64) -> String { SpoolFolder.leasePrefix + FileName.hex(poster) }

    /// Whether `age` (nanoseconds since a lease's last change) is within its ``Limits/leaseLifetime``.
    static func isFresh(age: Int64) -> Bool { age <= Limits.leaseLifetime.signedNanoseconds && age >= -Limits.leaseFutureTolerance.signedNanoseconds }
}

extension SpoolFolder {
    /// Opens `poster`'s lease file, creating it. A file planted under its name that is not a regular file of one
    /// link (a hard link to another file, which setting the size would cut, a FIFO, a symbolic link) is removed and
    /// made anew. A missing folder throws `ENOENT`.
    func openLease(poster: UInt64) throws(WormholeError) -> SpoolLease {
        let name = SpoolLease.name(poster: poster)
        var failure = WormholeError(.system, "lease \(name) is not a regular file of its own")
        for _ in 0..<2 {
            do throws(WormholeError) {
                // Non-blocking: opening a planted FIFO for writing fails (ENXIO) rather than waiting for a reader.
                let file = try Sys.open(name, [.writeOnly, .create, .noFollow, .nonBlocking], mode: 0o600, relativeTo: descriptor)
                let status = try Sys.status(of: file.rawValue)
                if status.isRegularFile && status.linkCount == 1 {
                    return SpoolLease(name: name, file: file, identity: status.identity)
                }
            } catch where error.systemErrno == .noSuchFile {
                throw error
            } catch {
                failure = error
            }
            // The name is this poster's alone: what is there was planted, or is a leftover of a damaged one.
            try? Sys.removeFile(name, relativeTo: descriptor)
        }
        throw failure
    }

    /// Whether `lease`'s name still names its file: another poster removes a lease it finds stale (its poster
    /// was stopped past ``Limits/leaseLifetime``), and then it must be made anew to be seen.
    func holds(_ lease: borrowing SpoolLease) -> Bool {
        guard let status = try? Sys.status(lease.name, relativeTo: descriptor, followLinks: false) else { return false }
        return status.identity == lease.identity
    }

    /// Sets the bytes `lease` reserves (its file's size), which also marks it fresh (its modification time).
    func setLease(_ lease: borrowing SpoolLease, to bytes: Int) throws(WormholeError) {
        try Sys.truncate(lease.file.rawValue, max(0, bytes))
    }

    /// Removes `lease`'s file if its name still names it, and closes it: best effort.
    func removeLease(_ lease: consuming SpoolLease) {
        if holds(lease) { remove(lease.name) }
    }

    /// What the other posters' fresh leases reserve, each held to `0...limit` and the sum held at `Int.max` (a
    /// lease's size is any number another process set). Stale leases (older than ``Limits/leaseLifetime``, or
    /// from further in the future than a clock's drift) are skipped and removed: their posters died or are stopped.
    func leasedBytes(except own: String, limit: Int) -> Int {
        let names = (try? Sys.listDirectory(descriptor)) ?? []
        var total = 0
        for name in names where name.hasPrefix(Self.leasePrefix) && name != own {
            guard let status = try? Sys.status(name, relativeTo: descriptor, followLinks: false),
                status.isRegularFile
            else { continue }
            guard SpoolLease.isFresh(age: status.ageNanoseconds) else {
                remove(name)
                continue
            }
            let claimed = min(max(0, status.size), max(0, limit))
            let sum = total.addingReportingOverflow(claimed)
            total = sum.overflow ? .max : sum.partialValue
        }
        return total
    }
}
