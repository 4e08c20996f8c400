#if canImport(Glibc)
import Foundation
import Glibc
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Large frames through a connection's frame file, written again and again", .throttled)
struct FrameFileTests {
    /// A frame file as a poster makes it, of `size` bytes, holding `frame` after a mark of `mark`.
    private func frameFile(_ frame: [UInt8], mark: UInt64 = 0, size: Int = 1 << 16) throws -> OwnedDescriptorBox {
        let box = OwnedDescriptorBox(fd: try MemoryFile.fixedSize(size).release().rawValue)
        try write(frame, mark: mark, to: box.fd)
        return box
    }

    private func write(_ frame: [UInt8], mark: UInt64 = 0, to fd: CInt) throws {
        let bytes = withUnsafeBytes(of: mark.bigEndian) { Array($0) } + frame
        try bytes.withRawBytes { (raw) throws(WormholeError) in try Sys.pwriteAll(fd, raw, at: 0) }
    }

    private func mark(of fd: CInt) throws -> UInt64 {
        var mark: UInt64 = 0
        _ = try withUnsafeMutableBytes(of: &mark) { (raw) throws(WormholeError) in try Sys.preadAll(fd, into: raw, at: 0) }
        return UInt64(bigEndian: mark)
    }

    /// The message a poster sends for `frame` through a frame file, declaring `size` bytes.
    private func message(for frame: [UInt8], size: Int? = nil) -> [UInt8] {
        var message = Array(frame.prefix(Frame.headerSize))
        message[3] = FrameFile.kind
        withUnsafeBytes(of: UInt64(size ?? frame.count).bigEndian) { message += $0 }
        return message
    }

    private func read(_ message: [UInt8], _ fd: CInt) throws -> Frame {
        try message.withRawBytes { (bytes) throws(WormholeError) in try FrameFile.read(bytes, file: Descriptor(rawValue: fd)) }
    }

    @Test("a frame file is read, marked read, and refused until written again")
    func readMarkAndReplay() throws {
        try #require(FrameFile.isAvailable)
        let blob = Data((0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let first = Frame(poster: 5, sequence: 41, name: "big", object: "o", userInfo: try UserInfoCodec.encode(["blob": blob], maximumSize: 1 << 20))
        let file = try frameFile(first.encoded(), size: 1 << 20)
        let received = try read(message(for: first.encoded()), file.fd)
        #expect(received.poster == 5 && received.sequence == 41 && received.name == "big" && received.object == "o")
        let userInfo = try UserInfoCodec.decode(try #require(received.userInfo), allowed: .propertyList)
        #expect(userInfo["blob"] as? Data == blob)
        // Read into memory of its own: the userInfo is not a mapping the poster could change.
        #expect(received.userInfo?.mapping == nil)
        #expect(try mark(of: file.fd) == 42)
        // The same frame again, not written since: a replay, refused.
        #expect(throws: WormholeError.self) { try read(message(for: first.encoded()), file.fd) }
        // Written again, as the poster does once it finds the mark: read again.
        let second = Frame(poster: 5, sequence: 44, name: "big", object: nil, userInfo: [9, 9])
        try write(second.encoded(), to: file.fd)
        let again = try read(message(for: second.encoded()), file.fd)
        #expect(again.sequence == 44 && again.userInfo?.array == [9, 9])
        #expect(try mark(of: file.fd) == 45)
        // A hole punched in it: refused as sparse (this process would allocate the page), and nothing allocated.
        let third = Frame(poster: 5, sequence: 46, name: "big", object: nil, userInfo: [UInt8](repeating: 7, count: 300 << 10)).encoded()
        try write(third, to: file.fd)
        // `fallocate(2)`, which Swift's Glibc does not declare, with FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE.
        typealias Allocate = @convention(c) (CInt, CInt, off_t, off_t) -> CInt
        let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate"))
        try #require(unsafeBitCast(symbol, to: Allocate.self)(file.fd, 0x02 | 0x01, 64 << 10, 64 << 10) == 0)
        var before = stat()
        try #require(fstat(file.fd, &before) == 0)
        #expect(throws: WormholeError.self) { try read(message(for: third), file.fd) }
        var after = stat()
        try #require(fstat(file.fd, &after) == 0)
        #expect(after.st_blocks == before.st_blocks)
    }

    @Test("forged frame files are refused; one that was read is marked, so its poster may write it again")
    func forgedFrameFiles() throws {
        try #require(FrameFile.isAvailable)
        let frame = Frame(poster: 7, sequence: 1, name: "ok", object: nil, userInfo: [1, 2, 3]).encoded()
        let other = Frame(poster: 7, sequence: 2, name: "ok", object: nil, userInfo: nil).encoded()
        func refused(_ message: [UInt8], _ fd: CInt) -> Bool {
            (try? read(message, fd)) == nil
        }
        // Not sealed against resizing: a mapping of it could fault.
        let resizable = OwnedDescriptorBox(fd: try LinuxCalls.makeMemoryFile("hostile").release().rawValue)
        try write(frame, to: resizable.fd)
        #expect(refused(message(for: frame), resizable.fd))
        #expect(try mark(of: resizable.fd) == 0, "not marked: the file was not looked at")
        // A regular file on disk, and a pipe: not memory files.
        let container = TemporaryContainer()
        let disk = open(container.path + "/frame", O_RDWR | O_CREAT, 0o600)
        try #require(disk >= 0)
        defer { close(disk) }
        try write(frame, to: disk)
        #expect(refused(message(for: frame), disk))
        var pipeEnds: [Int32] = [-1, -1]
        try #require(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { close($0) } }
        #expect(refused(message(for: frame), pipeEnds[0]))
        // Sealed at its size but sparse: its pages would be this process's to allocate.
        let sparse = OwnedDescriptorBox(fd: try LinuxCalls.makeMemoryFile("hostile").release().rawValue)
        try #require(ftruncate(sparse.fd, 1 << 16) == 0)
        try write(frame, to: sparse.fd)
        try LinuxCalls.addSeals(sparse.fd, LinuxCalls.sizeSeals)
        #expect(refused(message(for: frame), sparse.fd))
        #expect(try mark(of: sparse.fd) == 0)
        // Smaller than the mark and the frame it declares.
        let small = try frameFile(frame, size: 4096)
        #expect(refused(message(for: frame, size: 4096), small.fd))
        #expect(refused(message(for: frame, size: 1 << 40), small.fd))
        #expect(try mark(of: small.fd) == 0)
        // Another frame than the message names, and a frame whose userInfo does not end where it says: refused,
        // and marked, since the file was looked at.
        let mismatched = try frameFile(other)
        #expect(refused(message(for: frame), mismatched.fd))
        #expect(try mark(of: mismatched.fd) == 2)
        let trailing = try frameFile(frame + [0])
        #expect(refused(message(for: frame, size: frame.count + 1), trailing.fd))
        // A mark the listener did not write: not written again since read.
        let replayed = try frameFile(frame, mark: 2)
        #expect(refused(message(for: frame), replayed.fd))
        // One this process could not mark read, so that its sender could send it again and again: the file
        // opened again for reading alone, and files sealed against writing (now, or from now on).
        let writable = try frameFile(frame)
        let readOnly = open("/proc/self/fd/\(writable.fd)", O_RDONLY)
        try #require(readOnly >= 0)
        defer { close(readOnly) }
        #expect(refused(message(for: frame), readOnly))
        for seal in [LinuxCalls.sealWrite, LinuxCalls.sealFutureWrite] {
            let sealed = OwnedDescriptorBox(fd: try LinuxCalls.makeMemoryFile("hostile").release().rawValue)
            try #require(posix_fallocate(sealed.fd, 0, 1 << 16) == 0)
            try write(frame, to: sealed.fd)
            try LinuxCalls.addSeals(sealed.fd, LinuxCalls.sizeSeals | seal)
            #expect(refused(message(for: frame), sealed.fd))
        }
        #expect(try mark(of: writable.fd) == 0)
        // A cut message.
        #expect(refused(Array(message(for: frame).prefix(Frame.headerSize + 3)), small.fd))
        // A good one still reads.
        let good = try frameFile(frame)
        #expect(try read(message(for: frame), good.fd).sequence == 1)
    }

    /// The inode and the mark of the one frame file this process holds whose frame is named `name` (tests run
    /// side by side in this process); nil unless there is exactly one.
    private func frameFile(named name: String) throws -> (inode: UInt64, mark: UInt64)? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let found = try names.compactMap { entry -> (UInt64, UInt64)? in
            guard let fd = CInt(entry),
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry))?.hasPrefix("/memfd:wormhole-frames") == true
            else { return nil }
            var head = [UInt8](repeating: 0, count: 256)
            guard head.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, $0.count, 0) }) == head.count,
                head.firstRange(of: Array(name.utf8)) != nil
            else { return nil }
            var status = stat()
            guard fstat(fd, &status) == 0 else { return nil }
            return (UInt64(status.st_ino), try mark(of: fd))
        }
        return found.count == 1 ? found[0] : nil
    }

    @Test("a listener that has not read its file gets further large posts as sealed files; all arrive whole, in order")
    func busyFileLeftAlone() async throws {
        try #require(FrameFile.isAvailable)
        let container = TemporaryContainer()
        let posts = try await LargePosts("busy", count: 5, in: container)
        try posts.listener.suspend()
        // The first goes through the file; the file is not read yet, so the next two go as sealed files.
        for i in 0..<3 { #expect(try posts.post(i).delivered == 1) }
        let written = try #require(try frameFile(named: posts.name))
        #expect(written.mark == 0)
        posts.listener.signal(SIGCONT)
        try await posts.listener.awaitLines(4)
        // Read and marked: the next posts go through the same file again.
        let read = try #require(try frameFile(named: posts.name))
        #expect(read.inode == written.inode && read.mark != 0)
        #expect(try posts.post(3).delivered == 1)
        try await posts.listener.awaitLines(5)
        #expect(try posts.post(4).delivered == 1)
        try await posts.expectReceivedWhole(5)
        let last = try #require(try frameFile(named: posts.name))
        #expect(last.inode == written.inode && last.mark != read.mark)
    }

    @Test("a file not marked within its wait is let go: the next large post goes through a new one; both arrive whole")
    func unmarkedFileLetGo() async throws {
        try #require(FrameFile.isAvailable)
        let container = TemporaryContainer()
        let posts = try await LargePosts("let-go", count: 3, in: container)
        // A stopped listener marks nothing: to its poster it is one that lost the descriptor.
        try posts.listener.suspend()
        #expect(try posts.post(0).delivered == 1)
        let first = try #require(try frameFile(named: posts.name))
        #expect(first.mark == 0)
        // What is tested is a time: the wait passes, and nothing else can tell it has.
        try await Task.sleep(for: .milliseconds(Int(Limits.frameFileWait.nanoseconds / 1_000_000) + 200))
        #expect(try posts.post(1).delivered == 1)
        // The poster holds only the new file; the first is the listener's alone now, never written again.
        let second = try #require(try frameFile(named: posts.name))
        #expect(second.inode != first.inode && second.mark == 0)
        posts.listener.signal(SIGCONT)
        try await posts.listener.awaitLines(3)
        // The new file was read and marked: the next post goes through it again.
        let read = try #require(try frameFile(named: posts.name))
        #expect(read.inode == second.inode && read.mark != 0)
        #expect(try posts.post(2).delivered == 1)
        try await posts.expectReceivedWhole(3)
        let last = try #require(try frameFile(named: posts.name))
        #expect(last.inode == second.inode && last.mark != read.mark)
    }

    @Test("large posts to a listener that keeps up go through one file, written again each time, whole and in order")
    func oneFileAgainAndAgain() async throws {
        try #require(FrameFile.isAvailable)
        let container = TemporaryContainer()
        let count = 6
        let posts = try await LargePosts("again", count: count, in: container)
        var inodes: Set<UInt64> = [], marks: Set<UInt64> = []
        for i in 0..<count {
            #expect(try posts.post(i).delivered == 1)
            // Read before the next post: its file is free again.
            try await posts.listener.awaitLines(i + 2)
            let file = try #require(try frameFile(named: posts.name))
            inodes.insert(file.inode)
            marks.insert(file.mark)
        }
        // Each post went through the file (its listener marked each read), and no other file was made.
        #expect(inodes.count == 1 && marks.count == count && !marks.contains(0))
        try await posts.expectReceivedWhole(count)
    }
}

/// A listener in another process that takes `count` large posts of a name of its own, the center that posts
/// them (1 MiB each, a blob whose bytes depend on the post's number), and the check of what it received.
private struct LargePosts {
    static let size = 1 << 20
    let name: String
    let listener: Peer
    let center: GroupNotificationCenter

    init(_ prefix: String, count: Int, in container: TemporaryContainer) async throws {
        name = "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
        listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", name, "--count", String(count)])
        try await listener.awaitLines(1)
        center = try GroupNotificationCenter(containerURL: container.url)
    }

    /// Posts the `i`th blob.
    func post(_ i: Int) throws -> PostReport {
        let blob = Data((0..<Self.size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
        return try center.postReporting(name: .init(name), object: nil, userInfo: ["i": i, "blob": blob])
    }

    /// Waits for the listener to end, and checks that it received the first `count` posts, whole and in order.
    func expectReceivedWhole(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await listener.awaitExit(timeout: 60) == 0, sourceLocation: sourceLocation)
        let received = listener.jsonLines().dropFirst()
        #expect(received.map { $0["i"] as? Int } == Array(0..<count), sourceLocation: sourceLocation)
        for line in received {
            let i = try #require(line["i"] as? Int, sourceLocation: sourceLocation)
            #expect(line["blobBytes"] as? Int == Self.size, sourceLocation: sourceLocation)
            let sum = (0..<Self.size).reduce(0) { $0 &+ Int(UInt8(truncatingIfNeeded: $1 &* 31 &+ i)) }
            #expect(line["blobSum"] as? Int == sum, sourceLocation: sourceLocation)
        }
    }
}
#endif
