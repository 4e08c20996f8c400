/// The listener's side of its spool, run by the receive thread only: takes what posters wrote, hands it over
/// in order and in bounded chunks, drops copies it already had, and keeps what a durable listener must hold
/// for later in held files of its own.
///
/// A hand-over stops after a chunk when its handler says the observers hold too much, and goes on where it
/// stopped (``resumeHandOver(_:pausing:)``); nothing waits inside it. Its caller takes nothing meanwhile (the
/// taken segments it reads would be listed again), and what it reads from its sockets meanwhile goes after it
/// (``keepAfterHandOver(_:)``).
///
/// Crash safety, with the listener killed between any two steps: a taken segment is removed only after its
/// frames were handed over or written into a held file that replaced the old ones (by rename), so a record is
/// never lost; at worst it is handed over again (a durable listener gets each at least once), and a copy read
/// both from a held file and a taken segment in one drain is dropped. A segment this process has no descriptor
/// or memory to open now is kept whole for a later drain, not removed.

struct SpoolReader: ~Copyable {
    /// What to do with the frames of a drain.
    struct Handlers {
        /// Takes a chunk of frames; `goesOn` false when the observers hold too much for more now: the hand-over
        /// stops until it is resumed. A durable listener's returns the frames no observer matched as they were
        /// handed (one went since ``holdBack`` was asked): they are held, as if held back.
        /// With the hand-over's acknowledgement, when it keeps its files until its observers ran what they took.
        var deliver: ([Frame], SpoolAcknowledgement?) -> (goesOn: Bool, unmatched: [Frame])
        /// Whether a frame must stay in the spool because nothing observes it yet (durable listeners).
        var holdBack: (Frame) -> Bool
        /// Frames or records dropped, and why: counted and logged.
        var dropped: (_ count: Int, _ reason: String) -> Void
        /// What the drain could not do and loses nothing by: logged.
        var warning: (String) -> Void
        /// A count that changes whenever an observer is removed: a chunk gathered before a change may hold frames
        /// that no observer takes now, which are held (``deliver``), so the chunk is handed over before a frame
        /// after them is held.
        var observersRemoved: () -> UInt64 = { 0 }
        /// Whether what a hand-over takes stays in the spool until its observers ran it (a durable listener's):
        /// a process killed with notifications waiting for its observers gets them again in its next run.
        var acknowledges = false
    }


    let folder: SpoolFolder
    /// What this run took from the spool, by poster: a copy of one of these is dropped.
    private var recent: [UInt64: RecentRing<UInt64>] = [:]
    /// What the identity's last run took last from the spool (``SeenFormat``), by poster: a copy of one of these is
    /// dropped too, until this run has taken and handed over every segment that waited as it began.
    private var seeded: [UInt64: Set<UInt64>] = [:]
    /// Whether `seeded` was read from the spool folder.
    private var seenRead = false
    /// Whether a hand-over of everything in the spool was done, so `seeded` has served.
    private var seedServed = false
    private var nextHeld: UInt64 = 0
    /// The hand-over that stopped after a chunk, if one did.
    private var pending: SpoolHandOver?
    /// Segments said to be unreadable for now, so that a drain each second does not say so again.
    private var unreadableSaid: Set<String> = []

    init(folder: SpoolFolder) {
        self.folder = folder
    }

    /// What a drain took: segments renamed away from their posters, and held files to offer again.
    struct Taken {
        var names: [String]
        var held: [String]
        /// Files named like held ones that this listener did not write: removed unread.
        var planted: [String] = []
        /// Whether the take renamed every segment waiting, not only those taken before.
        var tookNew = false
        var isEmpty: Bool { names.isEmpty && held.isEmpty && planted.isEmpty }
    }

    /// Takes every segment posters wrote (so they write no more into them). With `includingHeld`, held frames
    /// are offered again too (an observer was added). With `newSegments` false, only what was taken before:
    /// a poster whose segment was taken goes back to its socket, and what it sends there is placed after *all*
    /// of its taken frames, so a second take before the first was handed over could put it after later ones.
    func take(includingHeld: Bool, newSegments: Bool = true) -> Taken {
        let names = folder.takeSegments(renaming: newSegments)
        guard includingHeld else { return Taken(names: names, held: [], tookNew: newSegments) }
        let held = folder.heldFiles()
        return Taken(names: names, held: held.files, planted: held.planted, tookNew: newSegments)
    }

    /// Hands over `direct` (what the listener read from its connections after the take) and what
    /// ``take(includingHeld:)`` took, in the order posted, in chunks, then removes what it took (what it could
    /// read; a hand-over that stops for the observers does so when it ends). With `holdingDirect`, a
    /// durable listener keeps the frames of `direct` that nothing observes yet with its held ones, as it keeps
    /// spooled frames (the drain that offers held frames again, and the last one as it ends); otherwise they are
    /// handed over as they are.
    ///
    /// A poster spools only once its socket is full, and goes back to its socket as soon as its segment is taken,
    /// so of one poster's frames read from its connection, those older than its first spooled one (by sequence)
    /// come before its spooled ones, and the others after them. Held frames were taken by earlier drains, which
    /// read the sockets whole: they come first.
    mutating func handOver(_ taken: Taken, direct: [Frame], holdingDirect: Bool = false, _ handlers: Handlers) {
        // One that stopped comes first, whole: it holds what was posted earlier.
        resumeHandOver(handlers, pausing: false)
        if !seenRead { readSeen(handlers) }
        let held = taken.held
        for name in taken.planted {
            folder.remove(name)
            handlers.dropped(1, "\(name) in the spool of listener \(FileName.hex(folder.listener)) is no held file of its; removed unread")
        }
        guard !taken.isEmpty || (holdingDirect && !direct.isEmpty) else {
            if !direct.isEmpty { _ = handlers.deliver(direct, nil) }
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
        // What earlier runs' observers gave back comes first, merged: once each, each poster's in order.
        let returned = mergedReturned(held.filter { $0.hasPrefix(SpoolFolder.returnedPrefix) }, handlers)
        let kept = held.filter { !$0.hasPrefix(SpoolFolder.returnedPrefix) }
        let parts: [SpoolHandOver.Part] = [.frames(returned.frames, mayHold: true, returned: true)] + (returned.unmerged + kept).map { .segment($0, isHeld: true) }
            + [.frames(early, mayHold: holdingDirect)]
            + taken.names.map { .segment($0, isHeld: false) } + [.frames(late, mayHold: holdingDirect)]
        pending = SpoolHandOver(
            parts: parts, removing: held + taken.names, takesEverything: taken.tookNew,
            acknowledgement: handlers.acknowledges ? SpoolAcknowledgement(folder: folder) : nil)
        pending?.unread.formUnion(returned.unread)
        resumeHandOver(handlers)
    }

    /// The frames of the returned files `names` (oldest first) as one run: each (poster, sequence) once however
    /// many observers gave it back, and each poster's frames in the order of their sequences, in the places its
    /// frames held, so that what several observers of one run gave back comes in the order posted. Read up to
    /// twice the delivery backlog's bytes (what observers can have held); the files past that are read after, as
    /// held files. A file this process cannot open now stays (`unread`), one that is damaged is counted.
    private func mergedReturned(_ names: [String], _ handlers: Handlers)
        -> (frames: [Frame], unmerged: [String], unread: Set<String>)
    {
        struct Key: Hashable {
            let poster: UInt64
            let sequence: UInt64
        }
        var frames: [Frame] = []
        var seen = Set<Key>()
        var unread = Set<String>()
        var bytes = 0
        for (index, name) in names.enumerated() {
            guard bytes <= 2 * Limits.deliveryBacklogBytes else { return (order(frames), Array(names[index...]), unread) }
            let end = folder.readSegment(name) { record in
                bytes += record.count
                guard let frame = try? Frame(decoding: record), frame.kind == .notification else { return }
                if seen.insert(Key(poster: frame.poster, sequence: frame.sequence)).inserted { frames.append(frame) }
            }
            switch end {
            case .whole, .torn: break
            case .damaged(let reason):
                handlers.dropped(1, "returned file \(name) of listener \(FileName.hex(folder.listener)) is damaged; the rest of it was skipped: \(reason)")
            case .unreadable(let reason):
                unread.insert(name)
                handlers.warning("cannot open returned file \(name) of listener \(FileName.hex(folder.listener)) now (\(reason)); it stays for a later drain")
            }
        }
        return (order(frames), [], unread)
    }

    /// `frames` with each poster's in the order of their sequences, in the places that poster's frames held.
    private func order(_ frames: [Frame]) -> [Frame] {
        var places: [UInt64: [Int]] = [:]
        for (index, frame) in frames.enumerated() { places[frame.poster, default: []].append(index) }
        var ordered = frames
        for indices in places.values {
            let sorted = indices.map { frames[$0] }.sorted { $0.sequence < $1.sequence }
            for (place, frame) in zip(indices, sorted) { ordered[place] = frame }
        }
        return ordered
    }

    /// Whether a hand-over stopped after a chunk and waits to be resumed.
    var isHandingOver: Bool { pending != nil }

    /// Keeps `frames`, read from the sockets while a hand-over is stopped, to be handed over after it, and
    /// returns true; false when no hand-over is stopped, and the caller hands them over.
    mutating func keepAfterHandOver(_ frames: [Frame]) -> Bool {
        guard let pending else { return false }
        if !frames.isEmpty { pending.parts.append(.frames(frames, mayHold: false)) }
        return true
    }

    /// Goes on with the hand-over that stopped, if one did, until it is done or, `pausing`, until the handler
    /// says again that the observers hold too much.
    mutating func resumeHandOver(_ handlers: Handlers, pausing: Bool = true) {
        guard let handing = pending else { return }
        while let (frame, size, mayHold) = nextFrame(of: handing, handlers) {
            if mayHold && handlers.holdBack(frame) {
                // An observer went since the chunk began: what it holds that nobody takes now came first, and is
                // held before this is.
                if !handing.chunk.isEmpty, handlers.observersRemoved() != handing.chunkRemovals,
                    !deliverChunk(handing, handlers) && pausing
                {
                    if hold(frame, handing) { return }
                    handing.chunk.append(frame)
                    handing.chunkBytes += size
                    return
                }
                if hold(frame, handing) { continue }
            }
            if handing.chunk.isEmpty { handing.chunkRemovals = handlers.observersRemoved() }
            handing.chunk.append(frame)
            handing.chunkBytes += size
            if handing.chunk.count >= Limits.spoolChunkFrames || handing.chunkBytes >= Limits.spoolChunkBytes {
                if !deliverChunk(handing, handlers) && pausing { return }
            }
        }
        pending = nil
        if !handing.chunk.isEmpty { _ = deliverChunk(handing, handlers) }
        // The new held file replaces the old ones before any of them, or any taken segment, is removed.
        if let keeper = handing.keeper, !keeper.publish(as: heldName()) {
            handlers.warning("cannot keep held frames of listener \(FileName.hex(folder.listener)); the spooled ones stay where they are")
            // Read again by a later drain: what was held from them is not a copy seen before.
            recent.removeAll()
            // Those read from the sockets were only in the file that could not be kept.
            if handing.heldDirect > 0 {
                handlers.dropped(handing.heldDirect, "notifications read from the sockets of listener \(FileName.hex(folder.listener)) could not be held")
            }
            return
        }
        StopPoint.reached("spool.hold")
        let done = handing.removing.filter { !handing.unread.contains($0) }
        if let acknowledgement = handing.acknowledgement {
            // Removed once the observers ran what it handed over; no later drain reads them meanwhile.
            acknowledgement.seal(removing: done)
        } else {
            for name in done { folder.remove(name) }
        }
        // Every copy the last run may have left was in what this took, and is gone now.
        if handing.takesEverything && handing.unread.isEmpty {
            seedServed = true
            seeded = [:]
        }
    }

    /// Hands the chunk over, and holds what no observer took as it was handed; returns whether the observers have
    /// room for more.
    private func deliverChunk(_ handing: SpoolHandOver, _ handlers: Handlers) -> Bool {
        let (goesOn, unmatched) = handlers.deliver(handing.chunk, handing.acknowledgement)
        handing.chunk.removeAll(keepingCapacity: true)
        handing.chunkBytes = 0
        for frame in unmatched where !hold(frame, handing) {
            handlers.dropped(1, "a notification no observer of listener \(FileName.hex(folder.listener)) took could not be held")
        }
        return goesOn
    }

    /// Writes `frame` into the hand-over's held file; false when there is nowhere to keep it (a full disk): then
    /// it is handed over rather than lost.
    private func hold(_ frame: Frame, _ handing: SpoolHandOver) -> Bool {
        if handing.keeper == nil && !handing.keeperFailed {
            handing.keeper = HeldWriter(folder: folder)
            if handing.keeper == nil { handing.keeperFailed = true }
        }
        guard handing.keeper?.append(frame) == true else { return false }
        // It came from the sockets: nowhere else holds it.
        if handing.fromSockets { handing.heldDirect += 1 }
        return true
    }

    /// The hand-over's next frame, its size, and whether a durable listener may hold it back; nil once every
    /// part was read. Spooled frames that do not decode, and copies already seen, are dropped here.
    private mutating func nextFrame(of handing: SpoolHandOver, _ handlers: Handlers) -> (Frame, size: Int, mayHold: Bool)? {
        while true {
            if let reading = handing.reading {
                switch reading.segment.next() {
                case .frame(let bytes):
                    guard let frame = try? Frame(decoding: bytes) else {
                        handlers.dropped(1, "spooled frame in \(reading.name) rejected")
                        continue
                    }
                    guard frame.kind == .notification, remember(frame) || reading.isHeld else { continue }
                    handing.fromSockets = false
                    return (frame, bytes.count, true)
                case .end(let end):
                    handing.reading = nil
                    switch end {
                    case .whole, .torn: break
                    case .damaged(let reason):
                        handlers.dropped(1, "spool segment \(reading.name) of listener \(FileName.hex(folder.listener)) is damaged; the rest of it was skipped: \(reason)")
                    case .unreadable(let reason):
                        // Nothing of it was read: a later drain reads it whole. Said once for each.
                        handing.unread.insert(reading.name)
                        if unreadableSaid.count >= Limits.rememberedPosters { unreadableSaid.removeAll() }
                        if unreadableSaid.insert(reading.name).inserted {
                            handlers.warning("cannot open spool segment \(reading.name) of listener \(FileName.hex(folder.listener)) now (\(reason)); it stays for a later drain")
                        }
                    }
                }
                continue
            }
            guard handing.next < handing.parts.count else { return nil }
            switch handing.parts[handing.next] {
            case .segment(let name, let isHeld):
                handing.reading = (folder.openSegment(name), name, isHeld)
                handing.next += 1
            case .frames(let frames, let mayHold, let returned):
                guard handing.frameIndex < frames.count else {
                    handing.next += 1
                    handing.frameIndex = 0
                    continue
                }
                let frame = frames[handing.frameIndex]
                handing.frameIndex += 1
                handing.fromSockets = !returned
                // A returned one is remembered, so that a copy still in a segment (a kill before it was removed)
                // is dropped; it is handed over whatever the last run's `seen` says, as a held frame is.
                if returned { _ = remember(frame) }
                return (frame, frame.byteCount, mayHold)
            }
        }
    }

    /// Records `frame` as seen; false when it was seen already (written again by a poster whose segment was
    /// taken while it wrote).
    private mutating func remember(_ frame: Frame) -> Bool {
        if seeded[frame.poster]?.contains(frame.sequence) == true { return false }
        if recent[frame.poster] == nil && recent.count >= Limits.rememberedPosters { recent.removeAll() }
        return recent[frame.poster, default: RecentRing(capacity: Limits.rememberedSequencesPerPoster)].insert(frame.sequence)
    }

    /// Writes, for each poster, the largest sequence this run took from the spool (``SeenFormat``), for the
    /// identity's next run: a durable listener's, as it ends, once its hand-over is done. A poster that wrote a
    /// record again into a new segment, because this run took the old one as it wrote, left a copy that this run
    /// may not have taken; the next one drops it. What the last run wrote is kept too while it has not served.
    /// Said when it cannot be written: the next run may then hand such a copy over again.
    mutating func keepSeen(_ handlers: Handlers) {
        guard pending == nil else { return }
        if !seenRead { readSeen(handlers) }
        var entries = recent.compactMap { (poster, ring) in ring.largest.map { (poster: poster, sequence: $0) } }
        for (poster, sequences) in seeded {
            for sequence in sequences where recent[poster]?.contains(sequence) != true { entries.append((poster, sequence)) }
        }
        // Nothing taken in this run, and nothing left of the last one's: what is there stays as true as it was.
        guard !entries.isEmpty || seedServed else { return }
        do throws(WormholeError) {
            try StoredFile.replace(SpoolFolder.seenName, in: folder.descriptor, with: SeenFormat.encode(entries))
        } catch {
            handlers.warning("cannot keep what listener \(FileName.hex(folder.listener)) took from its spool for its next run: \(error)")
        }
    }

    /// Reads what the identity's last run wrote with ``keepSeen(_:)``, once (again at the next hand-over when
    /// this process is out of descriptors or memory). None is not an error; what is not such a file is counted as
    /// dropped and removed, and at worst a copy is handed over again. Temporary files a run that died left in the
    /// folder are removed too.
    private mutating func readSeen(_ handlers: Handlers) {
        seenRead = true
        StoredFile.removeStaleTemporaries(in: folder.descriptor)
        let entries: [(poster: UInt64, sequence: UInt64)]
        do throws(WormholeError) {
            let bytes = try StoredFile.read(SpoolFolder.seenName, in: folder.descriptor, limit: SeenFormat.maximumSize)
            entries = try SeenFormat.decode(bytes)
        } catch where error.systemErrno == .noSuchFile {
            return
        } catch where error.isOutOfResources {
            // Read again at the next hand-over; this one may hand such a copy over again.
            seenRead = false
            handlers.warning("cannot read \(SpoolFolder.seenName) in the spool of listener \(FileName.hex(folder.listener)) now: \(error)")
            return
        } catch {
            handlers.dropped(1, "\(SpoolFolder.seenName) in the spool of listener \(FileName.hex(folder.listener)) is damaged, removed: \(error)")
            folder.removeAnything(SpoolFolder.seenName)
            return
        }
        for entry in entries { seeded[entry.poster, default: []].insert(entry.sequence) }
    }

    private mutating func heldName() -> String {
        if nextHeld == 0 {
            // A new held file replaces every older one, so numbering may start again at 1 after the largest.
            let (next, overflow) = (folder.heldFiles().files.compactMap(SpoolFolder.heldNumber).max() ?? 0).addingReportingOverflow(1)
            nextHeld = overflow ? 1 : next
        }
        defer { nextHeld = nextHeld == .max ? 1 : nextHeld + 1 }
        return SpoolFolder.heldPrefix + FileName.hex(nextHeld)
    }
}

/// A hand-over in progress: what is left to read, in order, where it is, and what it gathered.
private final class SpoolHandOver {
    enum Part {
        /// A held file of this listener's, or a segment a poster wrote.
        case segment(String, isHeld: Bool)
        /// Frames read from the sockets; `mayHold` when a durable listener may hold them back.
        /// Frames read from the sockets; or, `returned`, what earlier runs' observers gave back, merged
        /// (``SpoolReader/mergedReturned(_:_:)``).
        case frames([Frame], mayHold: Bool, returned: Bool = false)
    }

    /// What is left to read, in order; frames read from the sockets meanwhile are added at the end.
    var parts: [Part]
    /// Removed once everything was handed over or held.
    let removing: [String]
    /// Files the system could not read now: they stay.
    var unread: Set<String> = []
    var next = 0
    var frameIndex = 0
    var reading: (segment: SegmentReader, name: String, isHeld: Bool)?
    var chunk: [Frame] = []
    var chunkBytes = 0
    /// ``SpoolReader/Handlers/observersRemoved`` as the chunk began.
    var chunkRemovals: UInt64 = 0
    var keeper: HeldWriter?
    var keeperFailed = false
    /// How many frames read from the sockets the keeper holds: they are nowhere else.
    var heldDirect = 0
    /// Whether the frame last read came from the sockets.
    var fromSockets = false
    /// Whether it took every segment that waited (``SpoolReader/Taken/tookNew``).
    let takesEverything: Bool

    /// Counts what observers took and have not run; nil when the files go as soon as the hand-over is done.
    let acknowledgement: SpoolAcknowledgement?

    init(parts: [Part], removing: [String], takesEverything: Bool, acknowledgement: SpoolAcknowledgement?) {
        self.acknowledgement = acknowledgement
        self.parts = parts
        self.removing = removing
        self.takesEverything = takesEverything
    }
}
