/// The listener's side of its spool, run by the receive thread only: takes what posters wrote, hands it over
/// in order and in bounded chunks, drops copies it already had, and keeps what a durable listener must hold
/// for later in held files of its own.
///
/// Crash safety, with the listener killed between any two steps: a taken segment is removed only after its
/// frames were handed over or written into a held file that replaced the old ones (by rename), so a record is
/// never lost; at worst it is handed over again (a durable listener gets each at least once), and a copy read
/// both from a held file and a taken segment in one drain is dropped.
struct SpoolReader: ~Copyable {
    /// What to do with the frames of a drain.
    struct Handlers {
        var deliver: ([Frame]) -> Void
        /// Whether a frame must stay in the spool because nothing observes it yet (durable listeners).
        var holdBack: (Frame) -> Bool
        /// Frames or records dropped, and why: counted and logged.
        var dropped: (_ count: Int, _ reason: String) -> Void
        /// What the drain could not do and loses nothing by: logged.
        var warning: (String) -> Void
    }


    let folder: SpoolFolder
    private var recent: [UInt64: RecentRing<UInt64>] = [:]
    private var nextHeld: UInt64 = 0

    init(folder: SpoolFolder) {
        self.folder = folder
    }

    /// What a drain took: segments renamed away from their posters, and held files to offer again.
    struct Taken {
        var names: [String]
        var held: [String]
        /// Files named like held ones that this listener did not write: removed unread.
        var planted: [String] = []
        var isEmpty: Bool { names.isEmpty && held.isEmpty && planted.isEmpty }
    }

    /// Takes every segment posters wrote (so they write no more into them). With `includingHeld`, held frames
    /// are offered again too (an observer was added). With `newSegments` false, only what was taken before:
    /// a poster whose segment was taken goes back to its socket, and what it sends there is placed after *all*
    /// of its taken frames, so a second take before the first was handed over could put it after later ones.
    func take(includingHeld: Bool, newSegments: Bool = true) -> Taken {
        let names = folder.takeSegments(renaming: newSegments)
        guard includingHeld else { return Taken(names: names, held: []) }
        let held = folder.heldFiles()
        return Taken(names: names, held: held.files, planted: held.planted)
    }

    /// Hands over `direct` (what the listener read from its connections after the take) and what
    /// ``take(includingHeld:)`` took, in the order posted, then removes what it took. With `holdingDirect`, a
    /// durable listener keeps the frames of `direct` that nothing observes yet with its held ones, as it keeps
    /// spooled frames (the drain that offers held frames again, and the last one as it ends); otherwise they are
    /// handed over as they are.
    ///
    /// A poster spools only once its socket is full, and goes back to its socket as soon as its segment is taken,
    /// so of one poster's frames read from its connection, those older than its first spooled one (by sequence)
    /// come before its spooled ones, and the others after them. Held frames were taken by earlier drains, which
    /// read the sockets whole: they come first.
    mutating func handOver(_ taken: Taken, direct: [Frame], holdingDirect: Bool = false, _ handlers: Handlers) {
        let held = taken.held
        for name in taken.planted {
            folder.remove(name)
            handlers.dropped(1, "\(name) in the spool of listener \(FileName.hex(folder.listener)) is no held file of its; removed unread")
        }
        guard !taken.isEmpty || (holdingDirect && !direct.isEmpty) else {
            if !direct.isEmpty { handlers.deliver(direct) }
            return
        }
        var firstSpooled: [UInt64: UInt64] = [:]
        // A relay's segments hold its stable posters' frames besides its own (``RelayMark``): where each one's
        // spooled frames begin is read from the records, when a relay's frames came from a connection too.
        let relayedDirect = direct.contains { RelayMark.isRelayed($0.poster) }
        for name in taken.names {
            guard let poster = SpoolFolder.poster(ofSegment: name) else { continue }
            if RelayMark.isRelayed(poster) {
                guard relayedDirect else { continue }
                for (poster, sequence) in folder.firstSequences(in: name) {
                    firstSpooled[poster] = min(firstSpooled[poster] ?? sequence, sequence)
                }
            } else if firstSpooled[poster] == nil, let sequence = folder.firstSequence(of: name) {
                firstSpooled[poster] = sequence
            }
        }
        var early: [Frame] = []
        var late: [Frame] = []
        for frame in direct {
            if let first = firstSpooled[frame.poster], frame.sequence > first { late.append(frame) } else { early.append(frame) }
        }
        var chunk: [Frame] = []
        var chunkBytes = 0
        var keeper: HeldWriter? = nil
        var keeperFailed = false

        func take(_ frame: Frame, size: Int, mayHold: Bool = true) {
            if mayHold && handlers.holdBack(frame) {
                if keeper == nil && !keeperFailed {
                    keeper = HeldWriter(folder: folder)
                    if keeper == nil { keeperFailed = true }
                }
                // Nowhere to keep it (a full disk): hand it over rather than lose it.
                if keeper?.append(frame) == true { return }
            }
            chunk.append(frame)
            chunkBytes += size
            if chunk.count >= Limits.spoolChunkFrames || chunkBytes >= Limits.spoolChunkBytes {
                handlers.deliver(chunk)
                chunk.removeAll(keepingCapacity: true)
                chunkBytes = 0
            }
        }

        func read(_ name: String) {
            let isHeld = name.hasPrefix(SpoolFolder.heldPrefix)
            let end = folder.readSegment(name) { bytes in
                guard let frame = try? Frame(decoding: bytes) else {
                    handlers.dropped(1, "spooled frame in \(name) rejected")
                    return
                }
                guard frame.kind == .notification else { return }
                guard remember(frame) || isHeld else { return }
                take(frame, size: bytes.count)
            }
            if case .damaged(let reason) = end {
                handlers.dropped(1, "spool segment \(name) of listener \(FileName.hex(folder.listener)) is damaged; the rest of it was skipped: \(reason)")
            }
        }

        for name in held { read(name) }
        for frame in early { take(frame, size: frame.byteCount, mayHold: holdingDirect) }
        for name in taken.names { read(name) }
        for frame in late { take(frame, size: frame.byteCount, mayHold: holdingDirect) }
        if !chunk.isEmpty { handlers.deliver(chunk) }
        // The new held file replaces the old ones before any of them, or any taken segment, is removed.
        if let keeper, !keeper.publish(as: heldName()) {
            handlers.warning("cannot keep held frames of listener \(FileName.hex(folder.listener)); they stay where they are")
            return
        }
        StopPoint.reached("spool.hold")
        for name in held + taken.names { folder.remove(name) }
    }

    /// Records `frame` as seen; false when it was seen already (written again by a poster whose segment was
    /// taken while it wrote).
    private mutating func remember(_ frame: Frame) -> Bool {
        if recent[frame.poster] == nil && recent.count >= Limits.rememberedPosters { recent.removeAll() }
        return recent[frame.poster, default: RecentRing(capacity: Limits.rememberedSequencesPerPoster)].insert(frame.sequence)
    }

    private mutating func heldName() -> String {
        if nextHeld == 0 {
            // A new held file replaces every older one, so numbering may start again at 1 after the largest.
            let (next, overflow) = (folder.heldFiles().files.last.flatMap(SpoolFolder.heldNumber) ?? 0).addingReportingOverflow(1)
            nextHeld = overflow ? 1 : next
        }
        defer { nextHeld = nextHeld == .max ? 1 : nextHeld + 1 }
        return SpoolFolder.heldPrefix + FileName.hex(nextHeld)
    }
}

/// A held file being written: a temporary segment, renamed into place once whole. Its descriptor closes as the
/// writer goes.
private final class HeldWriter {
    let folder: SpoolFolder
    let temporary: String
    let key = UInt64.random(in: 0...UInt64.max)
    var offset = 0
    private let opened: OwnedDescriptor

    init?(folder: SpoolFolder) {
        guard let name = try? StoredFile.writeTemporary(SpoolRecord.header(key: key), in: folder.descriptor) else { return nil }
        do throws(WormholeError) {
            opened = try Sys.open(name, [.writeOnly, .noFollow], relativeTo: folder.descriptor)
        } catch {
            folder.remove(name)
            return nil
        }
        self.folder = folder
        temporary = name
        offset = SpoolRecord.headerSize
    }

    private var file: CInt { opened.rawValue }

    /// Appends `frame`'s record: its header and head, then its userInfo as it is (not copied behind them).
    func append(_ frame: Frame) -> Bool {
        let head = frame.encodedHead()
        let (fd, at, key) = (file, offset, key)
        let written = try? head.withRawBytes { (head) throws(WormholeError) -> Int in
            func write(_ archive: UnsafeRawBufferPointer) throws(WormholeError) -> Int {
                let prefix = SpoolRecord.header(head: head, rest: archive, key: key) + Array(head)
                try prefix.withRawBytes { (raw) throws(WormholeError) in try Sys.pwriteAll(fd, raw, at: at) }
                try Sys.pwriteAll(fd, archive, at: at + prefix.count)
                return prefix.count + archive.count
            }
            guard let userInfo = frame.userInfo else { return try write(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try userInfo.withBytes { (archive) throws(WormholeError) in try write(archive) }
        }
        guard let written else { return false }
        offset += written
        return true
    }

    /// Renames the file into place; false (and the file removed) when that fails.
    func publish(as name: String) -> Bool {
        do throws(WormholeError) {
            try Sys.renameFile(temporary, name, in: folder.descriptor)
            return true
        } catch {
            folder.remove(temporary)
            return false
        }
    }
}
