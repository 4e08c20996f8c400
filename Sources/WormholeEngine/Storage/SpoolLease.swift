import Synchronization

/// A poster's reservation of room in one listener's spool, so that the listener's cap holds when many posters
/// spool at once, without a lock and without any poster waiting for another: the whole lease policy, which a
/// link asks before it writes a record (``reserve(_:in:)``) and tells once the record is written
/// (``recordWritten()``).
///
/// The reservation is the file `lease-<poster>` in the spool folder: a header naming the process that holds it
/// (``LeaseFormat``), and past it a size (a sparse file, holding no blocks) that is what the poster is about to
/// write there. Before it writes a record a poster renews its lease when it has none, when what is left is too
/// small, or when it is older than ``Limits/leaseRenewal``: it first sets the file's size to what it asks for,
/// *then* measures the folder (the segments waiting, plus the other posters' leases). Of two posters renewing
/// at once, the one that measures last sees the other's lease, so together they never pass the cap. Once a
/// record is in its segment, where the folder counts it, the lease gives back its room: at once when nothing is
/// left, else once it claims ``Limits/leaseShrinkStep`` more than is left (a flood of small records does not pay a
/// call per record). So a lease describes what is reserved now: a poster that posted and exited leaves a lease
/// that claims nothing.
///
/// Another poster's lease counts while it is fresh (renewed within ``Limits/leaseLifetime``) and its poster is
/// not gone: a lease whose process the system says is gone (no such pid, or a pid that now belongs to a process
/// started at another time) counts nothing and is removed, however fresh another process keeps it. Where the
/// system will not say (another pid namespace; a sandboxed app on Apple platforms), age alone decides: a poster
/// stopped with a lease comes back to renew before it writes more than the record it was writing, so the cap
/// can be passed only by that record, for each poster stopped for longer than ``Limits/leaseLifetime`` between
/// renewing and finishing a write.
///
/// Damage is never a reason to refuse a post: a file under a lease's name that is not a regular file, has no
/// header of this format (an older Wormhole's lease, a file cut short or planted), or claims more than the cap,
/// counts nothing, and is counted and logged once (``LeaseDamage``). When this poster's own name holds something
/// it cannot remove (a folder with files in it), it spools unreserved: still within the cap as measured, but
/// unseen by posters measuring at the same moment.
struct SpoolLease: ~Copyable {
    /// What the leases of one poster share: who it is, the cap it keeps, and where damage is counted.
    struct Terms: Sendable {
        let poster: UInt64
        /// The most one listener's spool may hold.
        let limit: Int
        let damage: LeaseDamage
    }

    let terms: Terms
    /// This poster's lease file, once made.
    private var file: LeaseFile?
    /// Bytes reserved and not written yet.
    private var remaining = 0
    /// What the file claims now, past its header.
    private var claimed = 0
    /// When the lease was last renewed, in uptime nanoseconds; 0 before the first renewal.
    private var renewed: UInt64 = 0
    /// Bytes written under the lease since it was last renewed: the next renewal asks for about twice that, so a
    /// poster that spools little reserves little, and many posters at once do not refuse each other.
    private var spent = 0

    init(terms: Terms) {
        self.terms = terms
    }

    static func name(poster: UInt64) -> String { SpoolFolder.leasePrefix + FileName.hex(poster) }

    /// Whether `age` (nanoseconds since a lease's last change) is within its ``Limits/leaseLifetime``.
    static func isFresh(age: Int64) -> Bool {
        age <= Limits.leaseLifetime.signedNanoseconds && age >= -Limits.leaseFutureTolerance.signedNanoseconds
    }

    /// Takes room for a record of `size` bytes in `folder`, the listener's spool, renewing the lease first when
    /// it has none, when what is left is too small, or when it was renewed over ``Limits/leaseRenewal`` ago. Never
    /// waits for anyone; no call to the system while a renewed lease has room.
    /// - Throws: ``WormholeError/Code/spoolFull`` when the spool holds or others have reserved so much that the
    ///   record would pass the cap (then this lease reserves nothing); `ENOENT` when the folder is gone (so is
    ///   its listener); the system's error when this process is out of descriptors or memory to make its lease
    ///   or measure the folder (``WormholeError/isOutOfResources``): it cannot tell what the spool holds, and
    ///   reserves nothing. Leases of gone posters and damaged ones are not a reason.
    mutating func reserve(_ size: Int, in folder: SpoolFolder) throws(WormholeError) {
        let now = Sys.uptimeNanoseconds
        if renewed != 0, now &- renewed <= Limits.leaseRenewal.nanoseconds, remaining >= size {
            remaining -= size
            spent += size
            return
        }
        try renew(size, in: folder, at: now)
    }

    /// Gives back the room of the records written since the file was last set, once they are in their segment:
    /// at once when nothing is left of the reservation, else once the file claims ``Limits/leaseShrinkStep`` more
    /// than is left. Best effort: a file that cannot be set keeps claiming more, which errs on the safe side.
    mutating func recordWritten() {
        guard claimed > remaining, remaining == 0 || claimed - remaining >= Limits.leaseShrinkStep else { return }
        try? setClaim(remaining)
    }

    /// Gives back the whole lease, when its link stops spooling or goes away: removes its file if its name still
    /// names it. Best effort.
    mutating func release(in folder: SpoolFolder) {
        remaining = 0
        claimed = 0
        renewed = 0
        spent = 0
        guard let held = file.take() else { return }
        if folder.links(of: held.name, held.identity) > 0 { folder.remove(held.name) }
    }

    /// Renews this lease for a record of `size` bytes: sets the file to what it asks for, *then* measures what the
    /// folder holds and what the other posters' leases reserve; shrinks the ask to what is left when that still
    /// takes the record, or else sets the lease to nothing and refuses the record.
    private mutating func renew(_ size: Int, in folder: SpoolFolder, at now: UInt64) throws(WormholeError) {
        let limit = terms.limit
        guard size <= limit else {
            // Never fits: refused without reserving anything, which would only get in others' way.
            remaining = 0
            try? setClaim(0)
            throw WormholeError(
                .spoolFull,
                "a \(size)-byte record passes the \(limit)-byte limit of the spool of listener "
                    + FileName.hex(folder.listener))
        }
        try makeFile(in: folder)
        // About twice what was written under the last lease, up to 1/32 of the cap: a poster that spools a little
        // reserves a little, so many of them at once do not refuse each other.
        var ask = max(size, min(limit / Limits.leaseAskDivisor, 2 * spent))
        var refusal: WormholeError?
        do throws(WormholeError) {
            // Reserved before measuring: a poster that measures after this sees it.
            try setClaim(ask)
            let leased = try folder.reservedByOthers(except: Self.name(poster: terms.poster), terms: terms)
            let sum = try folder.totalBytes(includingTaken: false).addingReportingOverflow(leased)
            let backlog = sum.overflow ? Int.max : sum.partialValue
            if backlog > limit - ask {
                if backlog <= limit - size {
                    ask = limit - backlog
                    try setClaim(ask)
                } else {
                    try? setClaim(0)
                    ask = 0
                    refusal = WormholeError(
                        .spoolFull,
                        "spool of listener \(FileName.hex(folder.listener)) holds or has reserved \(backlog) bytes; "
                            + "\(size) more would pass its \(limit)-byte limit")
                }
            }
        } catch {
            try? setClaim(0)
            ask = 0
            refusal = error
        }
        renewed = now
        remaining = refusal == nil ? ask - size : 0
        spent = refusal == nil ? size : 0
        if let refusal { throw refusal }
    }

    /// Keeps the lease's file while its name still names it and it has no other name; else makes it anew, so that
    /// it is seen: another poster removed it as stale (this process was stopped), or it was never made, or someone
    /// linked it under another name, which makes readers skip it (then it is first set to claim nothing, and its
    /// name removed). Throws only `ENOENT`, for a folder that is gone, and the system's error when this process is
    /// out of descriptors or memory: a name this poster cannot take leaves it unreserved
    /// (``SpoolFolder/makeLease(poster:damage:)``).
    private mutating func makeFile(in folder: SpoolFolder) throws(WormholeError) {
        if let held = file.take() {
            switch folder.links(of: held.name, held.identity) {
            case 1:
                file = consume held
                return
            case 0:
                break
            default:
                try? held.descriptor.descriptor.truncate(to: LeaseFormat.headerSize)
                folder.remove(held.name)
            }
        }
        claimed = 0
        file = try folder.makeLease(poster: terms.poster, damage: terms.damage)
    }

    /// Sets what the file claims past its header (its size), which also marks it fresh (its modification time).
    /// Without a file (spooling unreserved), nothing to set.
    private mutating func setClaim(_ bytes: Int) throws(WormholeError) {
        guard let fd = file?.descriptor.descriptor else { return }
        let bytes = max(0, bytes)
        try fd.truncate(to: LeaseFormat.headerSize + bytes)
        claimed = bytes
    }
}

/// A poster's own lease file, open for setting its size.
struct LeaseFile: ~Copyable {
    let name: String
    let descriptor: OwnedDescriptor
    let identity: FileIdentity
}

/// The damaged leases a poster found, each counted (``WormholeStatistics/dropped``) and logged once: a lease
/// is looked at in every renewal, and one planted file must not count a thousand times, nor a thousand planted
/// files a thousand times each.
final class LeaseDamage: Sendable {
    private struct Key: Hashable {
        let listener: UInt64
        let name: String
        let identity: FileIdentity?
    }

    private struct Reported {
        var keys: Set<Key> = []
        /// When the set was last found full, in uptime nanoseconds; 0 while it has room.
        var fullSince: UInt64 = 0
    }

    private let reported = Mutex(Reported())
    private let count: @Sendable () -> Void

    /// `count` is called once per damaged lease found.
    init(count: @escaping @Sendable () -> Void) {
        self.count = count
    }

    /// Counts and logs the damaged lease `name` of `listener`'s spool, unless this one file was reported already.
    /// Past ``Limits/rememberedDamagedLeases`` of them, a new one is neither counted nor said until the ones
    /// remembered are forgotten, ``Limits/damagedLeasesForgottenAfter`` later: a folder planted with more files
    /// than that is said again at most that often, not at every renewal.
    func report(listener: UInt64, name: String, identity: FileIdentity?, _ reason: String) {
        let key = Key(listener: listener, name: name, identity: identity)
        let now = Sys.uptimeNanoseconds
        let isNew = reported.withLock { reported in
            if reported.keys.contains(key) { return false }
            if reported.keys.count >= Limits.rememberedDamagedLeases {
                if reported.fullSince == 0 { reported.fullSince = now }
                guard now &- reported.fullSince >= Limits.damagedLeasesForgottenAfter.nanoseconds else { return false }
                reported.keys.removeAll()
                reported.fullSince = 0
            }
            return reported.keys.insert(key).inserted
        }
        guard isNew else { return }
        count()
        Log.warning("spool of listener \(FileName.hex(listener)): lease \(name) \(reason)")
    }
}

/// What a reader finds under one lease's name.
enum LeaseReading {
    /// A lease of a poster not known to be gone, fresh, reserving this many bytes.
    case reserves(Int)
    /// Not changed for ``Limits/leaseLifetime`` (or dated further in the future than clocks drift): its poster
    /// died or is stopped.
    case stale
    /// Its poster is gone, as the system says.
    case gone
    /// Not a lease that counts: `reason` says why.
    case damaged(String, identity: FileIdentity?)
    /// Nothing there (removed meanwhile), or a lease being made (no header yet): claims nothing.
    case nothing
}

extension SpoolFolder {
    /// Makes `poster`'s lease file with its header: created, never opened as it was found, so that setting its
    /// size cuts nobody's file. Something already under its name (planted, or a leftover) is removed and the
    /// lease made again, once; when that fails too (a folder with files in it), or the file cannot be made at
    /// all, returns nil, reported to `damage`: the poster spools unreserved. A missing folder throws `ENOENT`; this
    /// process out of descriptors or memory throws the system's error, which is not damage (it measures nothing
    /// either, and refuses the record).
    func makeLease(poster: UInt64, damage: LeaseDamage) throws(WormholeError) -> LeaseFile? {
        let name = SpoolLease.name(poster: poster)
        var failure = "is held by something that cannot be removed"
        for attempt in 0..<2 {
            do throws(WormholeError) {
                let file = try Sys.open(
                    name, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600, relativeTo: descriptor)
                let identity = try file.descriptor.status().identity
                do throws(WormholeError) {
                    try LeaseFormat.header(ProcessMark.current).withRawBytes { (raw) throws(WormholeError) in
                        try file.descriptor.writeAll(raw, at: 0)
                    }
                } catch {
                    // Made by this poster a moment ago: its own to remove.
                    if links(of: name, identity) > 0 { remove(name) }
                    throw error
                }
                return LeaseFile(name: name, descriptor: file, identity: identity)
            } catch where error.systemErrno == .noSuchFile || error.isOutOfResources {
                throw error
            } catch where error.systemErrno == .fileExists {
                guard attempt == 0 else { break }
                // The name is this poster's alone: what is there was planted, or is a leftover of a damaged one.
                if (try? Sys.removeFile(name, relativeTo: descriptor)) == nil {
                    try? Sys.removeDirectory(name, relativeTo: descriptor)
                }
            } catch {
                failure = "cannot be made (\(error))"
                break
            }
        }
        let status = try? Sys.status(name, relativeTo: descriptor, followLinks: false)
        damage.report(
            listener: listener, name: name, identity: status?.identity, failure + ": its poster spools unreserved")
        return nil
    }

    /// How many names the file `identity` has when `name` still names it, else 0: another poster removes a lease
    /// it finds stale or its poster gone, and then it must be made anew to be seen.
    func links(of name: String, _ identity: FileIdentity) -> Int {
        guard let status = try? Sys.status(name, relativeTo: descriptor, followLinks: false),
            status.identity == identity
        else { return 0 }
        return max(1, status.linkCount)
    }

    /// What the other posters' leases reserve now (``SpoolLease``): each fresh lease of a poster not known to be
    /// gone, the sum held at `Int.max`. Stale leases and those of gone posters are removed; damaged ones are
    /// reported to `terms.damage`. None of them is an error, and none adds to the sum.
    /// - Throws: the system's error when this process is out of descriptors or memory to list the folder or open
    ///   a lease: it cannot tell what they reserve, and a lease it cannot read is not one that reserves nothing.
    func reservedByOthers(except own: String, terms: SpoolLease.Terms) throws(WormholeError) -> Int {
        var total = 0
        for name in try namesToMeasure() where name.hasPrefix(Self.leasePrefix) && name != own {
            switch try readLease(name, limit: terms.limit) {
            case .reserves(let bytes):
                let sum = total.addingReportingOverflow(bytes)
                total = sum.overflow ? .max : sum.partialValue
            case .stale, .gone:
                remove(name)
            case .damaged(let reason, let identity):
                terms.damage.report(
                    listener: listener, name: name, identity: identity, reason + "; it reserves nothing")
            case .nothing:
                continue
            }
        }
        return total
    }

    /// Reads the lease `name`: its file's type, links, age and size, its header, and what the system says of the
    /// process the header names. Damaged: anything but a regular file of one link (a poster makes its lease anew,
    /// never links it), a file without a header of this format, or one claiming more than `limit` (the cap).
    /// Opens nothing but a regular file, and that without following a link or waiting.
    /// - Throws: the system's error when this process is out of descriptors or memory to look at it
    ///   (``WormholeError/isOutOfResources``): it cannot tell. Anything else the file system says is a reading.
    func readLease(_ name: String, limit: Int) throws(WormholeError) -> LeaseReading {
        let found: FileStatus
        do throws(WormholeError) {
            found = try Sys.status(name, relativeTo: descriptor, followLinks: false)
        } catch where error.isOutOfResources {
            throw error
        } catch {
            return .nothing
        }
        guard found.isRegularFile else { return .damaged("is not a regular file", identity: found.identity) }
        guard SpoolLease.isFresh(age: found.ageNanoseconds) else { return .stale }
        guard found.linkCount == 1 else {
            return .damaged("has \(found.linkCount) names (a poster never links its lease)", identity: found.identity)
        }
        // Removed or replaced meanwhile: nothing there.
        guard let file = try openLease(name), let status = try? file.descriptor.status(),
            status.identity == found.identity, status.isRegularFile
        else { return .nothing }
        // Made, and its header not written yet: claims nothing.
        guard status.size > 0 else { return .nothing }
        guard status.size >= LeaseFormat.headerSize else {
            return .damaged("is cut short: \(status.size) bytes, less than a lease's header", identity: status.identity)
        }
        let claim = status.size - LeaseFormat.headerSize
        guard claim <= limit else {
            return .damaged("claims \(claim) bytes, more than the \(limit)-byte cap", identity: status.identity)
        }
        var header = [UInt8](repeating: 0, count: LeaseFormat.headerSize)
        let read = header.withUnsafeMutableBytes { raw in (try? file.descriptor.readAll(into: raw, at: 0)) ?? 0 }
        let holder: ProcessMark
        do throws(WormholeError) {
            guard read == header.count else { throw WormholeError(.corruptData, "is cut short while read") }
            holder = try LeaseFormat.holder(header)
        } catch {
            return .damaged("\(error.detail) (an older Wormhole's lease, or not a poster's)", identity: status.identity)
        }
        return ProcessState.of(holder) == .gone ? .gone : .reserves(claim)
    }

    /// Opens the lease `name` for reading, without following a link or waiting; nil when that fails (removed
    /// meanwhile, say).
    /// - Throws: the system's error when this process is out of descriptors or memory to open it.
    private func openLease(_ name: String) throws(WormholeError) -> OwnedDescriptor? {
        do throws(WormholeError) {
            return try Sys.open(name, [.noFollow, .nonBlocking], relativeTo: descriptor)
        } catch where error.isOutOfResources {
            throw error
        } catch {
            return nil
        }
    }
}
