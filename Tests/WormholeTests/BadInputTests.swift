import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Bad input: a clear error or a counted drop, never a crash", .throttled)
struct BadInputTests {
    /// Connects to the listener of `center`'s process as a hostile peer would, with a socket of its transport.
    private func connectToOwnListener(_ center: GroupNotificationCenter) throws -> OwnedDescriptorBox {
        let status = try #require(center.listenerStatus().first { $0.pid == getpid() })
        let type = GroupNotificationCenter.Transport.processDefault == .datagram ? SOCK_DGRAM : SOCK_SEQPACKET
        let fd = socket(AF_UNIX, Int32(type.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: status.socketPath.utf8) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(result == 0)
        return OwnedDescriptorBox(fd: fd)
    }

    @Test("random and truncated messages on a listener's socket are dropped and counted; later posts arrive")
    func garbageOnSocket() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("ok"), object: nil, queue: nil, using: recorder.block)
        let hostile = try connectToOwnListener(center)

        var generator = SeededGenerator(seed: 42)
        let valid = Frame(poster: 1, sequence: 1, name: "ok", object: nil, userInfo: nil).encoded()
        var sent = 0
        for round in 0..<300 {
            var message: [UInt8]
            switch round % 3 {
            case 0: message = (0..<Int.random(in: 1...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1: message = Array(valid.prefix(Int.random(in: 1..<valid.count, using: &generator)))
            default:
                message = valid + [1, 2, 3]
            }
            if message.isEmpty { continue }
            if message.withUnsafeBytes({ send(hostile.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 { sent += 1 }
        }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "ok", "--count", "3"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await recorder.wait(for: 3).compactMap(\.number) == [0, 1, 2])
        #expect(center.statistics.dropped == sent)
    }

    @Test("a hostile archive in a well-formed frame reaches the observer with userInfo nil")
    func hostileArchive() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("evil"), object: nil, queue: nil, using: recorder.block)
        let hostile = try connectToOwnListener(center)
        var archive = try KeyedArchiveEncoder.encode(["a": ["b": "c"]] as [AnyHashable: Any], maximumSize: 1 << 20)
        // Rename the nested dictionary's class to one that does not exist, keeping the length.
        let from = Array("NSDictionary".utf8), to = Array("NSXictionary".utf8)
        for index in 0...(archive.count - from.count) where Array(archive[index..<(index + from.count)]) == from {
            archive.replaceSubrange(index..<(index + from.count), with: to)
        }
        let frame = Frame(poster: 9, sequence: 1, name: "evil", object: nil, userInfo: archive).encoded()
        _ = frame.withUnsafeBytes { send(hostile.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let received = try await recorder.wait(for: 1)
        #expect(received.first?.userInfo == nil)
        #expect(center.statistics.userInfoRejected == 1)
    }

    @Test("a torn registry entry is skipped and counted; its listener writes it again by itself")
    func corruptRegistry() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "r", "--count", "1"])
        try await listener.awaitLines(1)
        let folder = container.path + "/registry/"
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { !$0.hasPrefix(".") })
        let original = try Data(contentsOf: URL(fileURLWithPath: folder + name))
        // Stopped, so that it cannot mend its entry before this process reads it: a listener mends at once.
        listener.signal(SIGSTOP)
        // Replace the file (as a torn writer would leave it) with half of itself.
        try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: folder + ".torn"))
        #expect(rename(folder + ".torn", folder + name) == 0)

        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.listenerStatus().isEmpty)
        #expect(center.statistics.dropped == 1)
        listener.signal(SIGCONT)
        // The listener notices once it runs again, and registers again.
        try await pollUntil("the listener registered again", timeout: 10) { !center.listenerStatus().isEmpty }
        #expect(center.listenerStatus().map(\.pid) == [listener.pid])
        try center.postReporting(name: .init("r"), object: nil, userInfo: ["i": 3])
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().last?["i"] as? Int == 3)
    }

    @Test("a damaged spool segment is skipped from the damage on and counted; a torn end is no notification")
    func damagedSpool() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("sp"), object: nil, queue: nil, using: recorder.block)
        let status = try #require(center.listenerStatus().first)
        let folder = container.path + "/spool/\(status.identifier)/"

        func frame(_ i: Int) throws -> [UInt8] {
            let archive = try UserInfoCodec.encode(["i": i], maximumSize: 1 << 20)
            return Frame(poster: 5, sequence: UInt64(i), name: "sp", object: nil, userInfo: archive).encoded()
        }
        // Record 1, then bytes that are no record, then a record that would read well if a reader searched on.
        var damaged = SpoolRecord.segment([try frame(1)])
        damaged += [0xde, 0xad, 0xbe, 0xef, 0, 0, 0]
        damaged += SpoolRecord.segment([try frame(9)]).dropFirst(SpoolRecord.headerSize)
        // Record 2, then record 3 cut short, as a writer killed mid-write leaves it.
        var torn = SpoolRecord.segment([try frame(2), try frame(3)])
        torn.removeLast(4)
        // Each written whole beside the folder, then renamed in: the listener may look at any moment, and a segment
        // it took half-written would lose its record here (a poster names a segment only once its record is whole).
        for (bytes, name) in [(damaged, "0000000000000005-0000000000000001.seg"), (torn, "0000000000000005-0000000000000002.seg")] {
            let staging = container.path + "/.staging-" + name
            try Data(bytes).write(to: URL(fileURLWithPath: staging))
            try #require(rename(staging, folder + name) == 0)
        }
        // The bell tells the listener to look; a later post from another process arrives too.
        center.endpoint.listenerSpool?.bell.touch()
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "sp", "--start", "4"])
        #expect(try await poster.awaitExit() == 0)
        let numbers = try await recorder.wait(for: 3).compactMap(\.number)
        #expect(Set(numbers) == [1, 2, 4])
        #expect(center.statistics.dropped == 1)
    }
}

/// A raw socket for tests that play a hostile peer.
final class OwnedDescriptorBox {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}
