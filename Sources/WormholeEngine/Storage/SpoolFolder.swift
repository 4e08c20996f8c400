import Synchronization

/// One listener's spool: the folder `spool/<id>/`, holding what posters could not put in its socket.
///
/// No lock, and no file with two writers:
/// - each poster appends to segments of its own, `<stamp>-<poster>.seg` (``SpoolRecord`` format), and rings
///   `bell` (a ``ChangeMark``) after each append; a segment gets that name only once its first record is
///   written whole (until then it is `<stamp>-<poster>.new`), so a listener never takes an empty one;
/// - the listener takes a segment by renaming it to `<stamp>-<poster>.taken` before reading it, so a poster
///   that finds its segment's name gone knows the listener has it, and a record it wrote while the rename
///   happened is written again into a new segment (the listener drops the copy it already has);
/// - what a durable listener must keep for later it writes into `held-<number>` files of its own, and what it
///   handed over last from its segments into `seen`;
/// - what a durable listener's observers were handed and had not run when they went it writes back into
///   `returned-<number>` files, which its identity's next run reads before everything else.
package final class SpoolFolder: Sendable {
    static let bellName = "bell"
    static let segmentSuffix = ".seg"
    static let takenSuffix = ".taken"
    /// A segment whose first record is still being written: it gets its `.seg` name once that record is whole.
    static let unnamedSuffix = ".new"
    static let heldPrefix = "held-"
    /// What observers of a durable listener were handed and gave back unrun (``keepReturned(_:)``).
    static let returnedPrefix = "returned-"
    /// What a durable listener handed over last from its segments, for its identity's next run (``SeenFormat``).
    static let seenName = "seen"
    /// A poster's reservation, `lease-<poster>` (``SpoolLease``): a header naming its process (``LeaseFormat``), and
    /// past it a sparse size, what the poster is about to write.
    static let leasePrefix = "lease-"

    let listener: UInt64
    /// The folder, open as long as this is.
    private let folder: OwnedDescriptor
    let bell: ChangeMark
    /// The returned files this process wrote: its own run does not read them again (its other observers ran
    /// what they hold already); the identity's next run does.
    let returnedHere = Mutex<Set<String>>([])
    /// Files a hand-over took whose notifications observers have not all run yet (``SpoolAcknowledgement``): no
    /// drain of this process reads them again, and they go once acknowledged.
    private let awaiting = Mutex<Set<String>>([])

    var descriptor: Descriptor { folder.descriptor }

    /// Opens the spool folder of `listener`. Its listener creates it (`create`); a poster only opens it, so a
    /// missing folder means a gone listener (`ENOENT`).
    init(listener: UInt64, in container: Container, create: Bool) throws(WormholeError) {
        self.listener = listener
        let name = RegistryEntry.spoolName(listener)
        folder = try Container.openDirectory(name, relativeTo: container.spoolDescriptor, create: create, what: "spool")
        bell = ChangeMark(Self.bellName, in: folder.descriptor)
        if create { bell.touch() }
    }

    /// The bytes the folder's files take on disk. A sparse file counts what it really holds, not the size it
    /// claims. Without `includingTaken`, only what waits for the listener to take it (its backlog). Posters' lease
    /// files (``SpoolLease``) are reservations, not data: they count nothing here, sparse or not. Not an error: a
    /// file gone meanwhile counts nothing, and so does a folder that cannot be listed (gone, say).
    /// - Throws: the system's error when this process is out of descriptors or memory to list the folder
    ///   (``WormholeError/isOutOfResources``): it cannot tell what the folder holds, and a cap measured as
    ///   nothing would admit anything.
    func totalBytes(includingTaken: Bool = true) throws(WormholeError) -> Int {
        var total = 0
        for name in try namesToMeasure() {
            guard name != Self.bellName, !name.hasPrefix(Self.leasePrefix),
                includingTaken || !name.hasSuffix(Self.takenSuffix)
            else { continue }
            let status: FileStatus
            do throws(WormholeError) {
                status = try Sys.status(name, relativeTo: descriptor, followLinks: false)
            } catch where error.isOutOfResources {
                throw error
            } catch {
                continue
            }
            guard status.isRegularFile else { continue }
            // A sparse file counts what its blocks hold; a file system can claim any count, held within Int.
            let held = max(0, min(status.size, status.allocatedBytes))
            let sum = total.addingReportingOverflow(held)
            total = sum.overflow ? .max : sum.partialValue
        }
        return total
    }

    /// The folder's names, for measuring what it holds: none when it cannot be listed (gone, say).
    /// - Throws: the system's error when this process is out of descriptors or memory to list it: it cannot tell.
    func namesToMeasure() throws(WormholeError) -> [String] {
        do throws(WormholeError) {
            return try Sys.listDirectory(descriptor)
        } catch where error.isOutOfResources {
            throw error
        } catch {
            return []
        }
    }

    // MARK: Posters

    /// A new segment of `poster`'s holding `frame`, its first record, named `<stamp>-<poster>.seg` once that
    /// record is written: a listener cannot take it before, whatever the record's size. Segments sort by
    /// `stamp`: the wall clock in nanoseconds when made, strictly increasing within one process
    /// (``SegmentStamps``), so a listener reads one poster's segments in the order written, and a later poster's
    /// after an earlier one's. Returns nil when a listener removed the unnamed file first (this poster was
    /// stopped past ``Limits/unnamedSegmentLifetime``): write the record again. A missing folder throws `ENOENT`.
    func createSegment(poster: UInt64, stamp: UInt64, holding frame: [UInt8]) throws(WormholeError) -> SpoolSegment? {
        var made: SpoolSegment? = nil
        try frame.withRawBytes { (raw) throws(WormholeError) in
            made = try createSegment(poster: poster, stamp: stamp, holding: raw, UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return made
    }

    /// ``createSegment(poster:stamp:holding:)`` for a frame given in two parts, its head and its userInfo.
    func createSegment(
        poster: UInt64, stamp: UInt64, holding head: UnsafeRawBufferPointer, _ rest: UnsafeRawBufferPointer
    ) throws(WormholeError) -> SpoolSegment? {
        let name = FileName.hex(stamp) + "-" + FileName.hex(poster)
        let unnamed = name + Self.unnamedSuffix
        let file = try Sys.open(unnamed, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600, relativeTo: descriptor)
        let identity = try file.descriptor.status().identity
        var segment = SpoolSegment(
            name: name + Self.segmentSuffix, file: file, identity: identity, key: UInt64.random(in: 0...UInt64.max))
        do throws(WormholeError) {
            try append(head, rest, to: &segment)
            StopPoint.reached("spool.name")
            try Sys.renameFile(unnamed, segment.name, in: descriptor)
        } catch {
            // The name is this process's alone (its stamp): nobody else's file is removed here.
            try? Sys.removeFile(unnamed, relativeTo: descriptor)
            if error.systemErrno == .noSuchFile { return nil }
            throw error
        }
        return segment
    }

    /// Appends one record to `segment`, with the segment's header before the first. A failed or short write
    /// leaves `segment` unusable (``SpoolSegment/isBroken``): its torn end is never taken for a record.
    func append(_ frame: [UInt8], to segment: inout SpoolSegment) throws(WormholeError) {
        try frame.withRawBytes { (raw) throws(WormholeError) in
            try append(raw, UnsafeRawBufferPointer(start: nil, count: 0), to: &segment)
        }
    }

    /// Appends one record holding a frame given in two parts, its head and its userInfo. A large userInfo is
    /// written where it is, after the rest, rather than copied behind them: a reader takes the record only once
    /// its length and check hold, so two writes tear no differently than one.
    func append(_ head: UnsafeRawBufferPointer, _ rest: UnsafeRawBufferPointer, to segment: inout SpoolSegment)
        throws(WormholeError)
    {
        var bytes = segment.offset == 0 ? SpoolRecord.header(key: segment.key) : []
        bytes += SpoolRecord.header(head: head, rest: rest, key: segment.key)
        bytes.append(contentsOf: head)
        let separate = rest.count > Limits.separateWriteSize
        if !separate { bytes.append(contentsOf: rest) }
        do throws(WormholeError) {
            let fd = segment.file.descriptor
            try bytes.withRawBytes { (raw) throws(WormholeError) in try fd.writeAll(raw, at: segment.offset) }
            if separate { try fd.writeAll(rest, at: segment.offset + bytes.count) }
            segment.offset += bytes.count + (separate ? rest.count : 0)
        } catch {
            segment.isBroken = true
            throw error
        }
    }


    /// Whether `segment` still has its name: nobody has taken it yet.
    func holds(_ segment: borrowing SpoolSegment) -> Bool {
        guard let status = try? Sys.status(segment.name, relativeTo: descriptor, followLinks: false) else { return false }
        return status.identity == segment.identity
    }


    // MARK: The listener

    /// Takes every segment posters have written (renaming it), and returns the names of all taken ones, in
    /// the order they were made. Taken ones left by a run that died come along. With `renaming` false, only the
    /// segments taken already.
    func takeSegments(renaming: Bool = true) -> [String] {
        let names = (try? Sys.listDirectory(descriptor)) ?? []
        var taken: [String] = []
        let waiting = awaiting.withLock { $0 }
        for name in names where !waiting.contains(name) {
            if name.hasSuffix(Self.takenSuffix) {
                taken.append(name)
            } else if name.hasSuffix(Self.unnamedSuffix) {
                removeIfAbandoned(name)
            } else if renaming && name.hasSuffix(Self.segmentSuffix) {
                let newName = String(name.dropLast(Self.segmentSuffix.count)) + Self.takenSuffix
                if (try? Sys.renameFile(name, newName, in: descriptor)) != nil { taken.append(newName) }
            }
        }
        StopPoint.reached("spool.take")
        return taken.sorted()
    }

    /// Removes the unnamed segment `name` when it is older than ``Limits/unnamedSegmentLifetime``: its poster is gone, or
    /// will write its record again when it runs. One whose time is as far in the future was planted, or the
    /// clock went back: removed too, so it cannot stay for ever.
    private func removeIfAbandoned(_ name: String) {
        guard let status = try? Sys.status(name, relativeTo: descriptor, followLinks: false) else { return }
        let lifetime = Limits.unnamedSegmentLifetime.signedNanoseconds
        if status.ageNanoseconds > lifetime || status.ageNanoseconds < -lifetime { remove(name) }
    }

    /// Whether any segment waits for the listener: a new link spools behind it rather than overtake it.
    func hasPendingSegments() -> Bool {
        let names = (try? Sys.listDirectory(descriptor)) ?? []
        return names.contains { $0.hasSuffix(Self.segmentSuffix) || $0.hasSuffix(Self.takenSuffix) }
    }

    /// Whether anything waits in the folder for the listener: a segment, taken or not, or a held file.
    func holdsAnything() -> Bool {
        let names = (try? Sys.listDirectory(descriptor)) ?? []
        let own = returnedHere.withLock { $0 }
        let waiting = awaiting.withLock { $0 }
        return names.contains {
            !waiting.contains($0)
                && ($0.hasSuffix(Self.segmentSuffix) || $0.hasSuffix(Self.takenSuffix) || $0.hasPrefix(Self.heldPrefix)
                    || ($0.hasPrefix(Self.returnedPrefix) && !own.contains($0)))
        }
    }

    /// The poster a segment's name (`<stamp>-<poster>.seg` or `.taken`) says wrote it.
    static func poster(ofSegment name: String) -> UInt64? {
        let parts = name.split(separator: "-")
        guard parts.count == 2, let last = parts.last, let dot = last.firstIndex(of: ".") else { return nil }
        return FileName.value(ofHex: String(last[..<dot]))
    }

    /// The sequence number of the first frame in the segment `name`, read from its header without checking the
    /// record (which may still be being written); nil when there is none yet.
    func firstSequence(of name: String) -> UInt64? {
        guard let opened = try? StoredFile.openForReading(name, in: descriptor, limit: Limits.maximumSegmentSize) else { return nil }
        let offset = SpoolRecord.headerSize + SpoolRecord.recordHeaderSize
        var bytes = [UInt8](repeating: 0, count: offset + Frame.headerSize)
        guard read(opened.file.descriptor, into: &bytes, at: 0) == bytes.count else { return nil }
        return bytes.withUnsafeBytes { Frame.Header(UnsafeRawBufferPointer(rebasing: $0[offset...]))?.sequence }
    }

    /// The first sequence of each poster among the frames of the segment `name`, read record by record: for a
    /// process that posts under posters besides the one its segments are named for (a relay, ``RelayMark``).
    func firstSequences(in name: String) -> [UInt64: UInt64] {
        var found: [UInt64: UInt64] = [:]
        _ = readSegment(name) { bytes in
            bytes.withUnsafeBytes { raw in
                guard let header = Frame.Header(raw), found[header.poster] == nil else { return }
                found[header.poster] = header.sequence
            }
        }
        return found
    }

    /// The number in a held file's name (`held-<16 lowercase hex>`); nil for any other name.
    static func heldNumber(_ name: String) -> UInt64? {
        number(in: name, after: heldPrefix)
    }

    /// The number in a returned file's name (`returned-<16 lowercase hex>`, below 2^48); nil for any other name.
    /// No listener gives back 2^48 times: a larger number was planted, and would leave no number after it.
    static func returnedNumber(_ name: String) -> UInt64? {
        number(in: name, after: returnedPrefix).flatMap { $0 < 1 << 48 ? $0 : nil }
    }

    private static func number(in name: String, after prefix: String) -> UInt64? {
        guard name.hasPrefix(prefix) else { return nil }
        return FileName.value(ofHex: String(name.dropFirst(prefix.count)))
    }

    /// The files a durable listener offers again, oldest first: the returned files of earlier runs (what their
    /// observers were handed and did not run), then the held ones; and the names that look like either but are
    /// not this listener's (not 16 lowercase hex digits): those are not read. This process's own returned files
    /// are left out: they are for the identity's next run.
    func heldFiles() -> (files: [String], planted: [String]) {
        let names = (try? Sys.listDirectory(descriptor)) ?? []
        let own = returnedHere.withLock { $0 }.union(awaiting.withLock { $0 })
        var returned: [(UInt64, String)] = []
        var held: [(UInt64, String)] = []
        var planted: [String] = []
        for name in names {
            if name.hasPrefix(Self.heldPrefix), !own.contains(name) {
                if let number = Self.heldNumber(name) { held.append((number, name)) } else { planted.append(name) }
            } else if name.hasPrefix(Self.returnedPrefix), !own.contains(name) {
                if let number = Self.returnedNumber(name) { returned.append((number, name)) } else { planted.append(name) }
            }
        }
        return ((returned.sorted { $0.0 < $1.0 } + held.sorted { $0.0 < $1.0 }).map(\.1), planted)
    }

    /// Keeps `names`, taken and handed over, from every later drain of this process until
    /// ``removeAcknowledged(_:)``.
    func keepUntilAcknowledged(_ names: [String]) {
        awaiting.withLock { $0.formUnion(names) }
    }

    /// Removes `names` once what they held was acknowledged.
    func removeAcknowledged(_ names: [String]) {
        for name in names { remove(name) }
        awaiting.withLock { $0.subtract(names) }
    }

    /// Reads the segment `name` record by record (``SegmentReader``), handing each frame to `body` in order.
    func readSegment(_ name: String, _ body: ([UInt8]) -> Void) -> SpoolRecord.End {
        let reader = openSegment(name)
        while true {
            switch reader.next() {
            case .frame(let frame): body(frame)
            case .end(let end): return end
            }
        }
    }

    /// The segment `name` open for reading record by record (``SpoolRecord/Records``), through a window of at
    /// most 1 MiB (a larger record is read on its own): memory stays bounded however large the file, and a run
    /// of small records costs one read. A missing file reads as a whole empty one; one this process has no
    /// descriptor or memory to open now is unreadable (it stays for a later reader), and one it cannot open or
    /// read for any other reason is damaged.
    func openSegment(_ name: String) -> SegmentReader {
        do throws(WormholeError) {
            try InjectedFault.failSegmentOpen()
            return SegmentReader(try StoredFile.openForReading(name, in: descriptor, limit: Limits.maximumSegmentSize))
        } catch where error.systemErrno == .noSuchFile {
            return SegmentReader(failed: .whole)
        } catch where error.isOutOfResources {
            return SegmentReader(failed: .unreadable("\(error)"))
        } catch {
            return SegmentReader(failed: .damaged("\(error)"))
        }
    }

    private func read(_ fd: Descriptor, into bytes: inout [UInt8], at offset: Int) -> Int {
        bytes.withUnsafeMutableBytes { raw in (try? fd.readAll(into: raw, at: offset)) ?? 0 }
    }

    func remove(_ name: String) {
        try? Sys.removeFile(name, relativeTo: descriptor)
    }

    /// Removes what is under `name`, a file or an empty folder (planted where this listener writes a file).
    func removeAnything(_ name: String) {
        if (try? Sys.removeFile(name, relativeTo: descriptor)) == nil { try? Sys.removeDirectory(name, relativeTo: descriptor) }
    }

    /// Removes a gone listener's spool folder and everything in it; a missing one is not an error.
    static func remove(listener: UInt64, in container: Container) {
        let name = RegistryEntry.spoolName(listener)
        for _ in 0..<3 {
            guard let folder = try? Sys.open(name, [.directory, .noFollow], relativeTo: container.spoolDescriptor)
            else { return }
            for file in (try? Sys.listDirectory(folder.descriptor)) ?? [] {
                try? Sys.removeFile(file, relativeTo: folder.descriptor)
            }
            // A poster may have added a segment meanwhile: then the folder is not empty, and we go again.
            do throws(WormholeError) {
                try Sys.removeDirectory(name, relativeTo: container.spoolDescriptor)
                return
            } catch where error.systemErrno == .directoryNotEmpty || error.systemErrno == .fileExists {
                continue
            } catch {
                return
            }
        }
    }
}

/// A segment a poster is filling: its descriptor, name and key, and where the next record goes.
struct SpoolSegment: ~Copyable {
    let name: String
    let file: OwnedDescriptor
    let identity: FileIdentity
    let key: UInt64
    var offset = 0
    /// Set once a write failed: nothing more is written to it.
    var isBroken = false
}

/// A segment open for reading, and where its reader is in it (``SpoolFolder/openSegment(_:)``): a reader may
/// stop between two records and go on later. Its descriptor closes as it goes.
final class SegmentReader {
    private let opened: OpenedFile?
    private var window: SegmentWindow
    private var records = SpoolRecord.Records()
    private let failed: SpoolRecord.End?

    fileprivate init(_ opened: consuming OpenedFile) {
        window = SegmentWindow(fd: opened.file.descriptor, size: opened.status.size)
        self.opened = .some(opened)
        failed = nil
    }

    fileprivate init(failed: SpoolRecord.End) {
        opened = nil
        window = SegmentWindow(fd: nil, size: 0)
        self.failed = failed
    }

    /// The next record's frame, or how the segment ended: damaged where a read failed, rather than torn.
    func next() -> SpoolRecord.Records.Step {
        if let failed { return .end(failed) }
        let step = records.next(in: &window)
        if case .end = step, let failure = window.failure { return .end(.damaged("a read failed: \(failure)")) }
        return step
    }
}

/// A window onto a segment file: reads it a megabyte at a time.
private struct SegmentWindow: SegmentBytes {
    static let capacity = Limits.segmentReadWindow
    /// The segment file; nil for a reader that failed before it opened one (its size is 0: nothing is read).
    let fd: Descriptor?
    let size: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Why a read of the file failed, if one did: what it could not read is lost, not torn.
    private(set) var failure: String?

    init(fd: Descriptor?, size: Int) {
        self.fd = fd
        self.size = size
    }

    /// A frame's bytes: through the window, or for one larger than the window in an array of their own, read
    /// past the window (which stays as it was) and handed over as it is: the frame decoded from it keeps it
    /// instead of a copy.
    mutating func frame(at offset: Int, count: Int) -> [UInt8]? {
        count > Self.capacity ? ownBytes(at: offset, count: count) : bytes(at: offset, count: count).map(Array.init)
    }

    /// `count` bytes at `offset` in an array of their own, read past the window (which stays as it was), or nil
    /// when the file holds fewer.
    private mutating func ownBytes(at offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset + count <= size else { return nil }
        var complete = true
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let got = read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            // A file cut short meanwhile: what was read is zero-filled and the record refused as torn.
            if got < count { UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[got...]).initializeMemory(as: UInt8.self, repeating: 0) }
            complete = got >= count
            initialized = count
        }
        return complete ? bytes : nil
    }

    /// `count` bytes at `offset`, or nil when the file holds fewer.
    mutating func bytes(at offset: Int, count: Int) -> ArraySlice<UInt8>? {
        guard offset >= 0, count >= 0, offset + count <= size else { return nil }
        if offset >= start && offset + count <= start + buffer.count {
            return buffer[(offset - start)..<(offset - start + count)]
        }
        let length = max(count, min(Self.capacity, size - offset))
        var fresh = [UInt8](repeating: 0, count: length)
        let got = fresh.withUnsafeMutableBytes { raw in read(into: raw, at: offset) }
        guard got >= count else { return nil }
        fresh.removeLast(length - got)
        buffer = fresh
        start = offset
        return buffer[0..<count]
    }

    /// Reads into `buffer` at `offset`; how many bytes it read, 0 where the read failed (said in ``failure``).
    private mutating func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        guard let fd else { return 0 }
        do throws(WormholeError) {
            return try fd.readAll(into: buffer, at: offset)
        } catch {
            failure = "\(error)"
            return 0
        }
    }
}
