#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A datagram inbox bound in a test's folder, and its reader, read by one thread after another.
private struct WaitingReads: @unchecked Sendable {
    static let name = "w.socket"
    let inbox: DatagramInbox
    let reader: MessageReader

    init(_ path: String, _ directory: Descriptor) throws {
        let bound = try UnixSocket.bind(.datagram, directory: directory, directoryPath: path, name: Self.name)
        reader = MessageReader(transport: .datagram, dropped: { _, _ in }, warning: { _ in })
        inbox = DatagramInbox(bound, reader: reader)
    }

    /// Starts a read that waits at most `timeoutMilliseconds` on a thread of its own, wakes `thread` once when the
    /// read waits, and returns what the read found: whether anything came, the wake-ups and the frames it read.
    func waitWokenOnce(_ thread: ReceiveThread, timeoutMilliseconds: Int32) async throws -> (came: Bool?, wakes: Int, frames: Int) {
        let ended = Mutex<(came: Bool?, wakes: Int, frames: Int)?>(nil)
        let began = Atomic<Bool>(false)
        Thread {
            var frames: [Frame] = []
            let came = thread.waitInRead {
                // The thread waits in a read from here on: its flag is up.
                began.store(true, ordering: .sequentiallyConsistent)
                return inbox.receiveWaiting(timeoutMilliseconds: timeoutMilliseconds, into: &frames)
            }
            ended.withLock { $0 = (came, reader.roundWakes, frames.count) }
        }.start()
        // Looked at every 5 ms, 10 seconds at most. The read may have run out by the time this sees it began.
        for _ in 0..<2_000 where !began.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(5)) }
        let reading = began.load(ordering: .sequentiallyConsistent)
        try #require(reading, "the read did not begin")
        thread.wake()
        // The read's whole time, and 10 seconds more for a loaded machine to let its thread go on.
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutMilliseconds)) + .seconds(10)
        while ended.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return try #require(ended.withLock { $0 }, "the read did not end")
    }
}

/// The two transports: every other test runs on the process's transport, and the first test here runs all of
/// them again on the other one.
@Suite("Transports: sequenced packets and datagrams", .throttled)
struct TransportTests {
    typealias Transport = GroupNotificationCenter.Transport

    /// The suites that touch no socket: the codec and the on-disk formats read the same bytes on both. And the
    /// relay's chaos run, whose dozens of processes at once, beside the whole suite twice on two cores, starved
    /// tests that stop a process for a second; the relay's other suites run on both transports.
    static let socketFreeSuites = [
        "CodecTests", "UserClassTests", "BoundedWorkTests", "EscapingTests", "FuzzReplayTests", "StorageFormatTests",
        "BenchmarkSmokeTests", "TransportTests", "RelayChaosTests",
    ]

    @Test("every test that uses sockets passes on the other transport too", .timeLimit(.minutes(30)))
    func wholeSuiteOnTheOtherTransport() async throws {
        // The run this test starts must not start another.
        guard ProcessInfo.processInfo.environment["WORMHOLE_NESTED_SUITE"] == nil else { return }
        let other: Transport = Transport.processDefault == .datagram ? .sequencedPacket : .datagram
        let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let run = try Peer(
            bundle, ["--testing-library", "swift-testing", "--skip", Self.socketFreeSuites.joined(separator: "|")],
            environment: ["WORMHOLE_TRANSPORT": other.rawValue, "WORMHOLE_NESTED_SUITE": "1", "NO_COLOR": "1"],
            absolute: true)
        // Awaited: a thread of Swift's pool (two here) held for the whole run would starve the tests running beside it.
        let status = try await run.awaitExit(timeout: 1500)
        // The test library reports on standard error.
        let report = run.output + run.errorOutput
        let failures = report.filter { $0.contains("✘") || $0.contains("recorded an issue") }
        #expect(status == 0, "on \(other): \(failures.suffix(40).joined(separator: "\n"))")
        #expect(report.contains { $0.contains("Test run with") && $0.contains("passed") }, "the run reports its tests")
    }

    @Test("one container mixes both: listeners of each transport get every poster's notifications, in order")
    func mixedContainer() async throws {
        let container = TemporaryContainer()
        let listeners = try Transport.allCases.map { transport in
            try Peer(
                "wormhole-test-peer", ["listen", "--container", container.path, "--name", "mix", "--count", "600"],
                environment: ["WORMHOLE_TRANSPORT": transport.rawValue])
        }
        for listener in listeners { try await listener.awaitLines(1) }
        // Posters of either transport, and one of each kind at once.
        let posters = try Transport.allCases.enumerated().map { index, transport in
            try Peer(
                "wormhole-test-peer",
                ["post", "--container", container.path, "--name", "mix", "--count", "300", "--start", "\(index * 300)"],
                environment: ["WORMHOLE_TRANSPORT": transport.rawValue])
        }
        for poster in posters { #expect(try await poster.awaitExit(timeout: 60) == 0) }
        for listener in listeners {
            #expect(try await listener.awaitExit(timeout: 60) == 0)
            let numbers = listener.jsonLines().compactMap { $0["i"] as? Int }
            #expect(numbers.filter { $0 < 300 } == Array(0..<300), "the first poster's, in order")
            #expect(numbers.filter { $0 >= 300 } == Array(300..<600), "the second poster's, in order")
        }
        let status = try GroupNotificationCenter(containerURL: container.url).listenerStatus()
        #expect(Set(status.map(\.transport)) == Set(Transport.allCases), "the registry says which each listened on")
    }

    @Test(
        "container paths from 40 to 200 bytes work both ways",
        arguments: Transport.allCases, [40, 80, 107, 108, 150, 200])
    func longContainerPaths(transport: Transport, length: Int) async throws {
        let root = TemporaryContainer("len")
        let padding = length - root.path.utf8.count - 1
        try #require(padding > 0)
        let path = root.path + "/" + String(repeating: "p", count: padding)
        #expect(path.utf8.count == length)
        let environment = ["WORMHOLE_TRANSPORT": transport.rawValue]
        let center = try GroupNotificationCenter(
            containerURL: URL(fileURLWithPath: path), clientIdentifier: nil, configuration: .init(transport: transport))
        let recorder = Recorder()
        center.addObserver(forName: .init("in"), object: nil, queue: nil, using: recorder.block)
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", path, "--name", "out", "--count", "50"], environment: environment)
        try await listener.awaitLines(1)
        for i in 0..<50 { try center.postReporting(name: .init("out"), object: nil, userInfo: ["i": i]) }
        let poster = try Peer(
            "wormhole-test-peer", ["post", "--container", path, "--name", "in", "--count", "50"], environment: environment)
        #expect(try await poster.awaitExit() == 0)
        #expect(try await recorder.wait(for: 50).compactMap(\.number) == Array(0..<50))
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == Array(0..<50))
    }

    @Test(
        "send errors Linux never returns (Darwin's ENOBUFS on a full datagram socket, EINVAL on a socket gone bad) and peers closing mid-send lose nothing",
        arguments: Transport.allCases, ["ENOBUFS/3", "EMSGSIZE/5", "ECONNRESET/4", "EDESTADDRREQ/6", "EPROTOTYPE/7", "EINVAL/3"])
    func injectedSendErrors(transport: Transport, fault: String) async throws {
        let (_, summary) = try await postThroughFault(transport, count: 500, posterFaults: ["WORMHOLE_INJECT_SEND": fault])
        #expect((summary["delivered"] as? Int ?? 0) + (summary["spooled"] as? Int ?? 0) == 500)
        if PeerState(errno: Self.errno(named: fault)) != .gone {
            #expect(summary["spooled"] as? Int ?? 0 > 0, "a send the listener cannot take now goes to the spool")
        }
    }

    @Test("a send buffer smaller than asked lowers the largest direct frame, said once, and loses nothing", arguments: Transport.allCases)
    func smallSendBuffer(transport: Transport) async throws {
        // 16 KiB asked: Linux grants twice that, far under a 60 KiB frame.
        let (run, _) = try await postThroughFault(
            transport, count: 40, posterFaults: ["WORMHOLE_INJECT_SEND_BUFFER": "16384"], posterArguments: ["--payload", "60000"])
        let warnings = run.poster.errorOutput.filter { $0.contains("send buffer of") && $0.contains("granted") }
        #expect(warnings.count == 1, "\(run.poster.errorOutput)")
        #expect(run.listener.jsonLines().filter { $0["i"] != nil }.allSatisfy { $0["blobBytes"] as? Int == 60000 })
    }

    /// The two processes of ``postThroughFault(_:count:listenerFaults:posterFaults:posterArguments:)``.
    struct FaultRun {
        let listener: Peer
        let poster: Peer
    }

    /// A listener of `transport` and a poster of `count` notifications to it, each with the faults given; returns
    /// both, and the poster's summary, once the listener got them all, each once and in order, and exited.
    private func postThroughFault(
        _ transport: Transport, count: Int, listenerFaults: [String: String] = [:], posterFaults: [String: String] = [:],
        posterArguments: [String] = []
    ) async throws -> (FaultRun, [String: Any]) {
        let container = TemporaryContainer()
        let environment = ["WORMHOLE_TRANSPORT": transport.rawValue]
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "f", "--count", "\(count)"],
            environment: listenerFaults.merging(environment) { $1 })
        try await listener.awaitLines(1)
        let poster = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", "f", "--count", "\(count)"] + posterArguments,
            environment: posterFaults.merging(environment) { $1 })
        #expect(try await poster.awaitExit() == 0)
        let summary = try #require(poster.jsonLines().first)
        #expect(summary["failed"] as? Int == 0)
        #expect(summary["removedDeadListeners"] as? Int ?? 0 == 0)
        #expect(try await listener.awaitExit(timeout: 30) == 0)
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == Array(0..<count), "each once, in order")
        return (FaultRun(listener: listener, poster: poster), summary)
    }

    @Test(
        "a socket whose reads (datagrams) or accepts (sequenced packets) keep failing is bound again, once a second, without spinning; nothing is lost",
        arguments: Transport.allCases)
    func failingSocketIsBoundAgain(transport: Transport) async throws {
        // The failure lasts through the first rebind, on the socket bound then too.
        let listener = try await postThroughFault(transport, count: 300, listenerFaults: ["WORMHOLE_INJECT_RECEIVE": "EINVAL/2"]).0.listener
        // One line per rebind (the second socket fails only if it is read or accepted on before the posts end):
        // a receive thread that spun on a failed socket would say far more.
        let rebinds = listener.errorOutput.filter { $0.contains("binding it again") }
        #expect((1...4).contains(rebinds.count), "\(listener.errorOutput.suffix(10))")
        #expect(rebinds.allSatisfy { $0.contains("EINVAL") || $0.contains("Invalid argument") }, "\(rebinds)")
    }

    @Test("a poster that finds no memory for a frame's bytes encodes each into an array: every post arrives, in order")
    func noMemoryForFrameBytes() async throws {
        let run = try await postThroughFault(
            .processDefault, count: 300, posterFaults: ["WORMHOLE_INJECT_ALLOCATE": "1"], posterArguments: ["--payload", "100"]).0
        // Each frame whole: its blob of 100 bytes, byte k being k * 31 + i.
        for line in run.listener.jsonLines() {
            guard let i = line["i"] as? Int else { continue }
            #expect(line["blobBytes"] as? Int == 100)
            #expect(line["blobSum"] as? Int == (0..<100).reduce(0) { $0 &+ Int(UInt8(truncatingIfNeeded: $1 &* 31 &+ i)) })
        }
    }

    @Test("a socket bound anew leaves none of the old ones open, and what posters sent across the rebinds arrives in order", arguments: Transport.allCases)
    func reboundSocketsAreClosed(transport: Transport) async throws {
        let container = TemporaryContainer()
        let environment = ["WORMHOLE_TRANSPORT": transport.rawValue]
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "r"],
            environment: environment.merging(["WORMHOLE_INJECT_RECEIVE": "EINVAL/3"]) { $1 })
        try await listener.awaitLines(1)
        // The socket fails as it is first read, by the batch of a poster that connects anew, and is bound anew:
        // three rebinds, then none. Each batch goes to whichever socket is bound then.
        for batch in 0..<4 {
            let poster = try Peer(
                "wormhole-test-peer",
                ["post", "--container", container.path, "--name", "r", "--count", "50", "--start", String(batch * 50)],
                environment: environment)
            #expect(try await poster.awaitExit() == 0)
            try await listener.awaitLines(1 + (batch + 1) * 50, timeout: 30)
            if batch < 3 { try await listener.awaitError(containing: "binding it again", count: batch + 1, timeout: 30) }
        }
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == Array(0..<200), "each once, in order")
        #expect(listener.errorOutput.count { $0.contains("binding it again") } == 3)
        // The kernel's table of local sockets, for those the listener holds that are bound to a name (an accepted
        // connection's is the listening socket's): one.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(listener.pid)/fd")
        let inodes = Set(descriptors.compactMap { fd -> Substring? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(listener.pid)/fd/\(fd)"),
                target.hasPrefix("socket:[")
            else { return nil }
            return Substring(target.dropFirst(8).dropLast())
        })
        let table = try procFile("/proc/net/unix").split(separator: "\n")
        let bound = table.filter { row in
            let fields = row.split(separator: " ")
            guard fields.count >= 8, inodes.contains(fields[6]) else { return false }
            // A sequenced-packet listener's accepted connections carry its address too: only the listening one counts.
            return fields[4] == "0002" || (Int(fields[3], radix: 16) ?? 0) & 0x10000 != 0
        }
        #expect(bound.count == 1, "\(bound); the listener's: \(table.filter { row in row.split(separator: " ").dropFirst(6).first.map(inodes.contains) ?? false })")
        listener.signal(SIGKILL)
    }

    @Test("a wait for the sockets that fails is counted and said, paused on, and then the listener goes on", arguments: Transport.allCases)
    func failingWait(transport: Transport) async throws {
        let listener = try await postThroughFault(transport, count: 50, listenerFaults: ["WORMHOLE_INJECT_POLL": "ENOMEM/20"]).0.listener
        let said = listener.errorOutput.filter { $0.contains("failed: ") && $0.contains("poll (injected)") }
        // Twenty failures, 10 ms apart: said at most once a second.
        #expect((1...2).contains(said.count), "\(listener.errorOutput.suffix(5))")
    }

    @Test(
        "a listener out of descriptors pauses: its registry entry reads as intact and stays as it is, it registers again at most once a second, says so at most once a second, and gets what was posted once it has descriptors again",
        arguments: Transport.allCases)
    func outOfDescriptors(transport: Transport) async throws {
        let container = TemporaryContainer()
        let environment = ["WORMHOLE_TRANSPORT": transport.rawValue]
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "d", "--exhaust-descriptors"],
            environment: environment)
        try await listener.awaitLines(2)
        let exhausted = try #require(listener.jsonLines().first { $0["exhausted"] != nil })
        try #require(exhausted["errno"] as? Int == Int(EMFILE), "the listener is out of descriptors: \(exhausted)")
        let saidBefore = listener.errorOutput.count
        let clock = ContinuousClock()
        let start = clock.now
        let folder = container.path + "/registry/"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        let entry = folder + (try #require(names.first, "the listener's entry, the only one: \(names)"))
        func inode() -> UInt64? {
            var status = stat()
            return lstat(entry, &status) == 0 ? UInt64(status.st_ino) : nil
        }
        let registered = try #require(inode())
        // A post: on sequenced packets its connection waits unaccepted, and the listener tries to accept it again
        // after each pause; on datagrams it is read.
        let center = try GroupNotificationCenter(
            containerURL: container.url, clientIdentifier: nil, configuration: .init(transport: transport))
        #expect(try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": 0]).failures.isEmpty)
        func attempts() -> Int { listener.errorOutput.count { $0.contains("registering again") } }

        // Its entry is intact: a registry it cannot read now says nothing else, and nothing is rewritten.
        try await Task.sleep(for: .seconds(3))
        #expect(attempts() == 0, "\(listener.errorOutput.suffix(5))")
        #expect(inode() == registered, "the entry's file is the one written as the listener registered")
        // Its entry removed (as a cleaner of files would): it cannot tell until it has descriptors again, and
        // tries at most once a second meanwhile. Counted over the measured window, with a margin of two.
        try FileManager.default.removeItem(atPath: entry)
        try await Task.sleep(for: .seconds(3))
        let seconds = Double((clock.now - start).components.seconds) + 1
        let said = listener.errorOutput.dropFirst(saidBefore)
        #expect(Double(attempts()) <= seconds + 2, "\(said.suffix(5))")
        #expect(Double(said.count) <= seconds + 2, "at most a warning a second, with a margin: \(said.suffix(10))")

        // Its descriptors back: it registers again, and what was posted arrives.
        listener.signal(SIGUSR1)
        let deadline = clock.now + .seconds(20)
        while !listener.jsonLines().contains(where: { $0["released"] != nil }) && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        while inode() == nil && clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(inode() != nil, "registered again: \(listener.output), \(listener.errorOutput.suffix(5))")
        while !listener.jsonLines().contains(where: { $0["i"] as? Int == 0 }) && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == [0], "the post, once")
        listener.signal(SIGKILL)
    }

    @Test("a poster out of descriptors that never read the registry fails its posts with the system's error, rather than report reaching nobody")
    func outOfDescriptorsBeforeTheRegistry() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "d"])
        defer { listener.signal(SIGKILL) }
        try await listener.awaitLines(1)
        // Out of descriptors before its first post: it cannot list the registry to learn who listens.
        let poster = try Peer(
            "wormhole-test-peer",
            ["post", "--container", container.path, "--name", "d", "--count", "3", "--exhaust-after", "0"])
        #expect(try await poster.awaitExit(timeout: 60) == 0, "\(poster.errorOutput.suffix(3))")
        let exhausted = try #require(poster.jsonLines().first { $0["exhausted"] != nil }, "\(poster.jsonLines())")
        try #require(exhausted["errno"] as? Int == Int(EMFILE), "the poster is out of descriptors: \(exhausted)")
        let report = poster.jsonLines().last ?? [:]
        #expect(report["notPosted"] as? Int == 3, "each post throws: \(report)")
        #expect(report["delivered"] as? Int == 0 && report["failed"] as? Int == 0, "\(report)")
        #expect(poster.errorOutput.count { $0.contains("not posted") && $0.contains("errno 24") } == 3,
            "\(poster.errorOutput.suffix(3))")
        // A post with descriptors to spare reaches the listener: the three were not taken for posts to nobody.
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": 7]).delivered == 1)
        let lines = try await listener.awaitLines(2, timeout: 20)
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == [7], "\(lines)")
    }

    @Test("no source sets SO_DEFUNCTOK, which would let xnu make a suspended app's sockets defunct")
    func noDefunctOK() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") || $0.hasSuffix(".c") || $0.hasSuffix(".h") }
        #expect(files.count > 50, "the sources were found")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("DEFUNCTOK"), "\(file)")
        }
    }

    private static func errno(named fault: String) -> CInt {
        let names: [String: CInt] = [
            "ENOBUFS": ENOBUFS, "EMSGSIZE": EMSGSIZE, "ECONNRESET": ECONNRESET, "EDESTADDRREQ": EDESTADDRREQ,
            "EPROTOTYPE": EPROTOTYPE, "EINVAL": EINVAL,
        ]
        return names[String(fault.prefix { $0 != "/" })] ?? 0
    }

    @Test("a durable listener that comes back on the other transport gets what was spooled and what follows, in order")
    func durableListenerChangesTransport() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        func post(_ range: Range<Int>) throws {
            for i in range { try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": i]) }
        }
        do {
            // Its first run, on datagrams, ends the way a process closes its center.
            let first = try GroupNotificationCenter(
                containerURL: container.url, clientIdentifier: "w", configuration: .init(transport: .datagram))
            let recorder = Recorder()
            first.addObserver(forName: .init("d"), object: nil, queue: nil, using: recorder.block)
            #expect(center.listenerStatus().first { $0.clientIdentifier == "w" }?.transport == .datagram)
            try post(0..<100)
            #expect(try await recorder.wait(for: 100).compactMap(\.number) == Array(0..<100))
        }
        // Its receive thread may still be finishing the recorder's last call (closing does not wait for observers'
        // code): looked at every 10 ms, 10 seconds at most.
        for _ in 0..<1_000 where center.listenerStatus().first?.state != .offline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(center.listenerStatus().first?.state == .offline)
        try post(100..<200)
        let second = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--client", "w", "--name", "d", "--count", "200"],
            environment: ["WORMHOLE_TRANSPORT": Transport.sequencedPacket.rawValue])
        try await second.awaitLines(1)
        #expect(center.listenerStatus().first?.transport == .sequencedPacket)
        try post(200..<300)
        #expect(try await second.awaitExit(timeout: 30) == 0)
        #expect(second.jsonLines().compactMap { $0["i"] as? Int } == Array(100..<300))
    }

    @Test("a socket that holds one message at a time is read a message a read, with a batch every eighth read; a queue found is read in batches again")
    func readPace() throws {
        var pair: [CInt] = [-1, -1]
        try #require(socketpair(AF_UNIX, UnixSocket.type(of: .datagram), 0, &pair) == 0)
        defer { pair.forEach { Sys.close($0) } }
        let reader = MessageReader(transport: .datagram, dropped: { _, reason in Issue.record("dropped: \(reason)") }, warning: { Issue.record("warned: \($0)") })
        var pace = ReadPace()
        var sent: UInt64 = 0
        var received: [UInt64] = []
        // At most 8 at a time: a Linux datagram socket queues 10.
        func queue(_ count: Int) {
            for _ in 0..<count {
                sent += 1
                let bytes = Frame(poster: 1, sequence: sent, name: "pace", object: nil, userInfo: nil).encoded()
                let result = bytes.withUnsafeBytes { send(pair[0], $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
                #expect(result == bytes.count)
            }
        }
        func read(paced: Bool = true) -> Int {
            var frames: [Frame] = []
            let open = paced
                ? reader.read(Descriptor(rawValue: pair[1]), into: &frames, limit: 512, pace: &pace)
                : reader.read(Descriptor(rawValue: pair[1]), into: &frames, limit: 512)
            #expect(open)
            received += frames.map(\.sequence)
            return frames.count
        }
        queue(1)
        #expect(read() == 1, "a batch asked for, one found")
        queue(8)
        #expect((0..<7).map { _ in read() } == Array(repeating: 1, count: 7), "then one a read")
        #expect(read() == 1, "the eighth asks for a batch: one was left")
        queue(8)
        #expect((0..<7).map { _ in read() } == Array(repeating: 1, count: 7))
        queue(2)
        #expect(read() == 3, "the eighth finds a queue")
        queue(5)
        #expect(read() == 5, "and reads are batches again")
        queue(1)
        #expect(read() == 1)
        queue(4)
        #expect(read(paced: false) == 4, "a read that must empty the socket takes everything")
        #expect(received == Array(1...sent), "every message, in order")
    }

    @Test("a receive thread waiting in a datagram socket's read, rather than a poll, is woken by one wake from another thread")
    func wakeEndsAWaitInRead() async throws {
        let folder = TemporaryContainer()
        let directory = try Sys.open(folder.path, .directory)
        let receiving = try WaitingReads(folder.path, directory.descriptor)
        let thread = try ReceiveThread()
        #expect(!thread.hasWakeSocket)
        thread.useWakeSocket(try UnixSocket.connect(
            .datagram, directory: directory.descriptor, directoryPath: folder.path, name: WaitingReads.name))
        #expect(thread.hasWakeSocket)
        // A wake that comes before the read ends the wait at once, unread.
        thread.wake()
        var called = false
        #expect(thread.waitInRead { called = true; return false } == true)
        #expect(!called)
        // A frame posted is read in the wait.
        let poster = try UnixSocket.connect(.datagram, directory: directory.descriptor, directoryPath: folder.path, name: WaitingReads.name)
        try Frame(poster: 1, sequence: 1, name: "n", object: nil, userInfo: nil).encoded().withRawBytes { (bytes) throws(WormholeError) in
            try UnixSocket.send(poster.descriptor, bytes)
        }
        var frames: [Frame] = []
        #expect(thread.waitInRead { receiving.inbox.receiveWaiting(timeoutMilliseconds: 20_000, into: &frames) } == true)
        #expect(frames.count == 1 && receiving.reader.roundWakes == 0)
        // With nothing to read, the read waits, and one wake ends it: a wake lost would leave it 20 seconds.
        let outcome = try await receiving.waitWokenOnce(thread, timeoutMilliseconds: 20_000)
        #expect(outcome.came == true)
        #expect(outcome.wakes == 1 && outcome.frames == 0)
        #expect(thread.hasWakeSocket)
    }

    @Test("a wake socket that reaches another socket than the one read is dropped after its first missed wake")
    func wakeSocketToAnotherSocketIsDropped() async throws {
        let folder = TemporaryContainer()
        let directory = try Sys.open(folder.path, .directory)
        let receiving = try WaitingReads(folder.path, directory.descriptor)
        let elsewhere = try UnixSocket.bind(.datagram, directory: directory.descriptor, directoryPath: folder.path, name: "other.socket")
        // The read runs out of time, although a wake sent its datagram: the wake socket goes, and the thread polls.
        // A wake that comes only after the read ran out (a loaded machine) proves nothing: again, with a longer read.
        var dropped = false
        for timeout: Int32 in [300, 1_000, 3_000, 10_000] where !dropped {
            let thread = try ReceiveThread()
            thread.useWakeSocket(try UnixSocket.connect(.datagram, directory: directory.descriptor, directoryPath: folder.path, name: "other.socket"))
            #expect(thread.hasWakeSocket)
            let outcome = try await receiving.waitWokenOnce(thread, timeoutMilliseconds: timeout)
            #expect(outcome.came == false, "the wake reached another socket than the one read")
            dropped = !thread.hasWakeSocket
        }
        #expect(dropped)
        withExtendedLifetime(elsewhere) {}
    }

    @Test("what each errno says about a listener, on either platform")
    func peerStates() {
        #expect(PeerState(errno: EAGAIN) == .busy)
        #expect(PeerState(errno: ENOBUFS) == .busy, "Darwin: a full datagram socket")
        #expect(PeerState(errno: EMSGSIZE) == .busy)
        #expect(PeerState(errno: ECONNREFUSED) == .gone)
        #expect(PeerState(errno: ENOENT) == .gone)
        #expect(PeerState(errno: ECONNRESET) == .gone, "Darwin: a connected datagram sender whose receiver closed")
        #expect(PeerState(errno: EDESTADDRREQ) == .gone, "Darwin: the sends after that")
        #expect(PeerState(errno: ENOTCONN) == .gone, "Linux: the sends after ECONNREFUSED")
        #expect(PeerState(errno: EPROTOTYPE) == .otherTransport)
        #expect(PeerState(errno: EACCES) == .failed)
        #expect(PeerState(errno: nil) == .failed)
    }
}
