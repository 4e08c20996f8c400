import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A listener hands its spool over in chunks. When a chunk leaves its observers holding too much, the hand-over
/// stops where it is and goes on later from there: nothing is taken or removed meanwhile, nothing is lost,
/// repeated or reordered. Real segment files in a real spool folder.
@Suite("Spool hand-over: stops for the observers and goes on where it stopped")
struct SpoolHandOverTests {
    /// A spool folder with a segment of `counts[i]` frames for poster `5 + i`, each written whole beside the
    /// folder and renamed in, as posters do.
    private static func spool(_ temporary: TemporaryContainer, counts: [Int]) throws -> SpoolFolder {
        let container = try Container(path: temporary.path)
        let folder = try SpoolFolder(listener: 7, in: container, create: true)
        for (index, count) in counts.enumerated() {
            let poster = UInt64(5 + index)
            let frames = (1...count).map {
                Frame(poster: poster, sequence: UInt64($0), name: "n", object: nil, userInfo: nil).encoded()
            }
            let name = FileName.hex(UInt64(index + 1)) + "-" + FileName.hex(poster) + SpoolFolder.segmentSuffix
            let staging = temporary.path + "/staging"
            try Data(SpoolRecord.segment(frames)).write(to: URL(fileURLWithPath: staging))
            try #require(rename(staging, temporary.path + "/spool/" + RegistryEntry.spoolName(7) + "/" + name) == 0)
        }
        return folder
    }

    /// What the handlers saw.
    private final class Seen {
        var chunks: [[Frame]] = []
        var room = false
        var dropped = 0
        var frames: [Frame] { chunks.flatMap { $0 } }
    }

    private static func handlers(_ seen: Seen, holdingBack: @escaping (Frame) -> Bool = { _ in false }) -> SpoolReader.Handlers {
        SpoolReader.Handlers(
            deliver: { frames, _ in seen.chunks.append(frames); return (seen.room, []) },
            holdBack: holdingBack,
            dropped: { count, _ in seen.dropped += count },
            warning: { _ in })
    }

    /// Expects `reader`'s hand-over to have stopped, or not (read outside `#expect`, which copies what it looks at).
    private func expectHandingOver(
        _ reader: borrowing SpoolReader, _ expected: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let stopped = reader.isHandingOver
        #expect(stopped == expected, sourceLocation: sourceLocation)
    }

    private static func files(_ folder: SpoolFolder) -> [String] {
        ((try? Sys.listDirectory(folder.descriptor)) ?? []).filter { $0 != SpoolFolder.bellName }.sorted()
    }

    @Test("1,300 spooled frames: the hand-over stops after each chunk without room, keeps its files, then gives all in order")
    func stopsAndGoesOn() throws {
        let temporary = TemporaryContainer()
        let folder = try Self.spool(temporary, counts: [700, 600])
        var reader = SpoolReader(folder: folder)
        let seen = Seen()
        let handlers = Self.handlers(seen)
        let taken = reader.take(includingHeld: false)
        #expect(taken.names.count == 2)

        reader.handOver(taken, direct: [], handlers)
        #expect(seen.chunks.map(\.count) == [Limits.spoolChunkFrames])
        expectHandingOver(reader, true)
        // Nothing is removed while it is stopped: a listener killed now gets it all again.
        #expect(Self.files(folder) == taken.names.sorted())

        reader.resumeHandOver(handlers)
        #expect(seen.chunks.map(\.count) == [Limits.spoolChunkFrames, Limits.spoolChunkFrames])
        expectHandingOver(reader, true)

        seen.room = true
        reader.resumeHandOver(handlers)
        expectHandingOver(reader, false)
        #expect(seen.frames.count == 1300)
        #expect(seen.frames.map(\.poster) == Array(repeating: 5, count: 700) + Array(repeating: 6, count: 600))
        #expect(seen.frames.map(\.sequence) == (1...700).map(UInt64.init) + (1...600).map(UInt64.init))
        #expect(Self.files(folder).isEmpty)
        #expect(seen.dropped == 0)

        // A resume with nothing stopped does nothing.
        reader.resumeHandOver(handlers)
        #expect(seen.frames.count == 1300)
    }

    @Test("a hand-over that stopped while holding frames back publishes its held file and removes the segments only at its end")
    func holdsBackAcrossStops() throws {
        let temporary = TemporaryContainer()
        let folder = try Self.spool(temporary, counts: [1200])
        var reader = SpoolReader(folder: folder)
        let seen = Seen()
        let handlers = Self.handlers(seen) { $0.sequence % 2 == 0 }
        let taken = reader.take(includingHeld: false)
        let direct = [Frame(poster: 9, sequence: 1, name: "n", object: nil, userInfo: nil)]

        reader.handOver(taken, direct: direct, holdingDirect: true, handlers)
        #expect(seen.chunks.map(\.count) == [Limits.spoolChunkFrames])
        expectHandingOver(reader, true)
        #expect(folder.heldFiles().files.isEmpty)

        // A stop goes on to the end at once, room or not.
        reader.resumeHandOver(handlers, pausing: false)
        expectHandingOver(reader, false)
        // The direct frame (odd) first: nothing of its poster was spooled. Then the odd spooled ones.
        #expect(seen.frames.map(\.sequence) == [1] + stride(from: 1, through: 1199, by: 2).map(UInt64.init))
        let held = folder.heldFiles().files
        #expect(held.count == 1)
        #expect(Self.files(folder) == held)
        var heldSequences: [UInt64] = []
        _ = folder.readSegment(held[0]) { bytes in
            if let frame = try? Frame(decoding: bytes) { heldSequences.append(frame.sequence) }
        }
        #expect(heldSequences == stride(from: 2, through: 1200, by: 2).map(UInt64.init))
    }

    @Test("frames read from the sockets while a hand-over is stopped come after it, however it ends")
    func framesReadMeanwhileComeAfter() throws {
        for finishes in [false, true] {
            let temporary = TemporaryContainer()
            let folder = try Self.spool(temporary, counts: [600])
            var reader = SpoolReader(folder: folder)
            let seen = Seen()
            let handlers = Self.handlers(seen)
            let later = (601...603).map { Frame(poster: 5, sequence: UInt64($0), name: "n", object: nil, userInfo: nil) }
            // Nothing stopped: the caller hands them over itself.
            let keptBefore = reader.keepAfterHandOver(later)
            #expect(!keptBefore)

            reader.handOver(reader.take(includingHeld: false), direct: [], handlers)
            expectHandingOver(reader, true)
            let kept = [reader.keepAfterHandOver(Array(later[..<2])), reader.keepAfterHandOver([]), reader.keepAfterHandOver(Array(later[2...]))]
            #expect(kept == [true, true, true])
            if finishes {
                // As the listener stops: at once, room or not.
                reader.resumeHandOver(handlers, pausing: false)
            } else {
                seen.room = true
                reader.resumeHandOver(handlers)
            }
            expectHandingOver(reader, false)
            #expect(seen.frames.map(\.sequence) == (1...603).map(UInt64.init))
            #expect(Self.files(folder).isEmpty)
        }
    }

    @Test("a hand-over begun while one is stopped finishes that one first, whole: order is kept")
    func secondHandOverFinishesFirst() throws {
        let temporary = TemporaryContainer()
        let folder = try Self.spool(temporary, counts: [600])
        var reader = SpoolReader(folder: folder)
        let seen = Seen()
        let handlers = Self.handlers(seen)
        reader.handOver(reader.take(includingHeld: false), direct: [], handlers)
        expectHandingOver(reader, true)

        // Its taken segment is listed again, and read as gone once the first hand-over removed it.
        let later = (601...603).map { Frame(poster: 5, sequence: UInt64($0), name: "n", object: nil, userInfo: nil) }
        reader.handOver(reader.take(includingHeld: false), direct: later, handlers)
        expectHandingOver(reader, false)
        #expect(seen.frames.map(\.sequence) == (1...603).map(UInt64.init))
        #expect(Self.files(folder).isEmpty)
    }

    @Test("a copy a poster wrote again as its segment was taken is not handed over again by the listener's next run")
    func copyAfterTheRunEnds() throws {
        let temporary = TemporaryContainer()
        let folder = try Self.spool(temporary, counts: [100])
        var reader = SpoolReader(folder: folder)
        let taken = reader.take(includingHeld: false)
        // The poster's append of 100 raced the rename: it writes 100 again as the first record of a new segment,
        // and goes on there.
        let frames = (100...150).map { Frame(poster: 5, sequence: UInt64($0), name: "n", object: nil, userInfo: nil).encoded() }
        let staging = temporary.path + "/staging"
        try Data(SpoolRecord.segment(frames)).write(to: URL(fileURLWithPath: staging))
        let name = FileName.hex(2) + "-" + FileName.hex(5) + SpoolFolder.segmentSuffix
        try #require(rename(staging, temporary.path + "/spool/" + RegistryEntry.spoolName(7) + "/" + name) == 0)
        let seen = Seen()
        seen.room = true
        reader.handOver(taken, direct: [], Self.handlers(seen))
        #expect(seen.frames.map(\.sequence) == (1...100).map(UInt64.init))
        // The run ends, as a durable listener's does: it takes no new segment, and keeps what it took.
        reader.keepSeen(Self.handlers(seen))
        #expect(Self.files(folder) == [name, SpoolFolder.seenName].sorted())
        #expect(try Self.seenFile(temporary).map(\.sequence) == [100])
        // A run that takes nothing keeps it as it was.
        var idle = SpoolReader(folder: folder)
        idle.keepSeen(Self.handlers(seen))
        #expect(try Self.seenFile(temporary).map(\.sequence) == [100])

        var next = SpoolReader(folder: folder)
        let left = next.take(includingHeld: false)
        let after = Seen()
        after.room = true
        next.handOver(left, direct: [], Self.handlers(after))
        #expect(after.frames.map(\.sequence) == (101...150).map(UInt64.init))
        #expect(after.dropped == 0)
        // What the last run kept has served: only what this one took is kept.
        next.keepSeen(Self.handlers(after))
        #expect(try Self.seenFile(temporary).map(\.sequence) == [150])
    }

    private static func seenFile(_ temporary: TemporaryContainer) throws -> [(poster: UInt64, sequence: UInt64)] {
        let path = temporary.path + "/spool/" + RegistryEntry.spoolName(7) + "/" + SpoolFolder.seenName
        return try SeenFormat.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test("a seen file that is not one is counted as dropped and removed, and the spool is handed over whole", arguments: [
        "garbage", "cut", "count", "large count", "check", "fifo", "folder", "huge",
    ])
    func damagedSeenFile(_ damage: String) throws {
        let temporary = TemporaryContainer()
        let folder = try Self.spool(temporary, counts: [20])
        let path = temporary.path + "/spool/" + RegistryEntry.spoolName(7) + "/" + SpoolFolder.seenName
        var good = SeenFormat.encode([(poster: 5, sequence: 3)])
        #expect(try SeenFormat.decode(good).map(\.sequence) == [3])
        switch damage {
        case "garbage": try Data("$null".utf8).write(to: URL(fileURLWithPath: path))
        case "cut": try Data(good.dropLast()).write(to: URL(fileURLWithPath: path))
        case "count":
            good[11] = 2
            try Data(good).write(to: URL(fileURLWithPath: path))
        case "large count":
            good[8] = 0x80
            try Data(good).write(to: URL(fileURLWithPath: path))
        case "folder": try #require(mkdir(path, 0o700) == 0)
        case "check":
            good[good.count - 5] ^= 1
            try Data(good).write(to: URL(fileURLWithPath: path))
        case "fifo": try #require(mkfifo(path, 0o600) == 0)
        default:
            // Sparse, and claiming far more than any seen file holds.
            let fd = open(path, O_WRONLY | O_CREAT, 0o600)
            try #require(fd >= 0 && ftruncate(fd, 1 << 30) == 0)
            close(fd)
        }
        var reader = SpoolReader(folder: folder)
        let seen = Seen()
        seen.room = true
        reader.handOver(reader.take(includingHeld: false), direct: [], Self.handlers(seen))
        #expect(seen.frames.map(\.sequence) == (1...20).map(UInt64.init), "frame 3 is not taken for one seen")
        #expect(seen.dropped == 1)
        #expect(Self.files(folder).isEmpty)
    }
}
