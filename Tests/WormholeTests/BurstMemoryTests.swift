import Foundation
import Testing
@testable import Wormhole

/// A listener stopped while large posts arrive holds, once it resumes, about one chunk at a time besides what its
/// observers' backlog holds: its sockets are read a bounded round at a time and handed over in chunks, its spool
/// a record at a time, and the memory files it maps are let go once decoded. So a burst costs the listener a few
/// megabytes, whatever its size, and every post arrives, whole and in order. Peak resident memory (`VmHWM`) against
/// resident memory while idle (`VmRSS`), from `/proc`: Linux only.
@Suite("A burst to a stopped listener costs a bounded window, not the burst", .serialized, .throttled)
struct BurstMemoryTests {
    /// How the listener observes, who posts, and which paths both sides take.
    struct Case: CustomTestStringConvertible, Sendable {
        /// `queue`: a serial OperationQueue, as `wormhole listen` observes; `receive`: the receive thread.
        let observer: String
        /// Whether each post comes from a process of its own (a frame file on a new connection each, as
        /// `wormhole post` sends) rather than all from one (a frame file, then sealed memory files, then the spool).
        let posterPerPost: Bool
        /// The paths Apple platforms take, over datagrams: no memory files, every large post through the spool.
        /// Otherwise Linux's own over sequenced packets, the transport `wormhole listen` uses, whichever one the
        /// run's environment names: over datagrams, a drain of the spool reads the socket's queue whole, each frame
        /// file in it copied (the Guarantees article's table of limits says so), and posts from processes of their
        /// own, which fill that queue and spool the rest, cost more there.
        let applePaths: Bool
        var testDescription: String {
            "\(observer) observer, \(posterPerPost ? "a poster per post" : "one poster")\(applePaths ? ", Apple platforms' paths" : "")"
        }

        var environment: [String: String] {
            applePaths ? ["WORMHOLE_APPLE_PATHS": "1", "WORMHOLE_TRANSPORT": "datagram"] : ["WORMHOLE_TRANSPORT": "seqpacket"]
        }
    }

    static let count = 30
    static let payload = 1_000_000
    /// The bound: the observers' backlog (``Limits/deliveryBacklogBytes``) and one frame past it, the chunk being
    /// decoded, the notification the observer is reading, and what the allocator keeps of what was freed.
    static let boundKiB = 8 << 10

    @Test(
        "30 posts of 1 MB to a stopped listener, then resumed: its peak stays within 8 MiB of its idle memory, and all arrive",
        arguments: [
            Case(observer: "queue", posterPerPost: false, applePaths: false),
            Case(observer: "queue", posterPerPost: true, applePaths: false),
            Case(observer: "receive", posterPerPost: false, applePaths: false),
            Case(observer: "queue", posterPerPost: false, applePaths: true),
        ])
    func burst(_ test: Case) async throws {
        let container = TemporaryContainer()
        let environment = test.environment
        let listener = try Peer("wormhole-test-peer", [
            "listen-burst", "--container", container.path, "--name", "burst", "--count", "\(Self.count)",
            "--observer", test.observer,
        ], environment: environment)
        _ = try await listener.awaitLines(1)
        // One post first, so that what the first notification sets up (threads, code) counts as idle.
        let warmUp = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", "burst", "--start", "-1", "--payload", "1000",
        ], environment: environment)
        #expect(try await warmUp.awaitExit() == 0, "warm-up: \(warmUp.errorOutput)")
        _ = try await listener.awaitLines(2)

        try listener.suspend()
        let idle = try Self.memory("VmRSS", of: listener)
        let posters = test.posterPerPost ? (0..<Self.count).map { [$0, 1] } : [[0, Self.count]]
        var spooled = 0
        for range in posters {
            let poster = try Peer("wormhole-test-peer", [
                "post", "--container", container.path, "--name", "burst", "--start", "\(range[0])",
                "--count", "\(range[1])", "--payload", "\(Self.payload)",
            ], environment: environment)
            #expect(try await poster.awaitExit(timeout: 120) == 0, "poster: \(poster.errorOutput)")
            let report = try #require(poster.jsonLines().first)
            #expect(report["failed"] as? Int == 0, "\(report)")
            spooled += report["spooled"] as? Int ?? 0
        }
        // The burst waits outside the listener, all of it in its spool on Apple platforms' paths.
        if test.applePaths { #expect(spooled == Self.count) }
        #expect(listener.isStopped)
        listener.signal(SIGCONT)

        #expect(try await listener.awaitExit(timeout: 240) == 0, "listener: \(listener.errorOutput)")
        let summary = try #require(listener.jsonLines().last)
        #expect(summary["received"] as? Int == Self.count)
        #expect(summary["inOrder"] as? Bool == true)
        #expect(summary["intact"] as? Bool == true)
        #expect(summary["blobBytes"] as? Int == Self.count * Self.payload)
        // 30 MB posted: a listener that held the burst, or a chunk of several of its posts, would pass the bound.
        let peak = try #require(summary["peakResidentKiB"] as? Int)
        if summary["sanitized"] as? Bool != true {
            #expect(peak - idle < Self.boundKiB, "grew by \(peak - idle) KiB above its idle \(idle) KiB")
        }
    }

    @Test(
        "`wormhole listen`, stopped while 30 posts of a 1 MB string arrive, each from a poster of its own, then resumed: within 8 MiB, every line printed"
    )
    func tool() async throws {
        let container = TemporaryContainer()
        let listener = try Peer(
            "wormhole", ["listen", "burst", "--container", container.path], environment: ["WORMHOLE_TRANSPORT": "seqpacket"])
        try await listener.awaitError(containing: "listening in")
        try listener.suspend()
        let idle = try Self.memory("VmRSS", of: listener)
        for i in 0..<Self.count {
            // A poster of its own each, as `wormhole post` is (a center of its own, a connection of its own), and a
            // string of its own letter each: nothing decoded is shared between two.
            let center = try GroupNotificationCenter(containerURL: container.url)
            let letter = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(i % 26)))
            let report = try center.postReporting(
                name: .init("burst"), object: nil, userInfo: ["i": i, "s": String(repeating: letter, count: Self.payload)])
            #expect(report.delivered == 1 && report.failures.isEmpty, "\(report)")
        }
        #expect(listener.isStopped)
        listener.signal(SIGCONT)

        try await listener.awaitLines(Self.count, timeout: 120)
        let peak = try Self.memory("VmHWM", of: listener)
        listener.signal(SIGTERM)
        #expect(try await listener.awaitExit() == 0)
        let printed = listener.jsonLines().compactMap { $0["userInfo"] as? [String: Any] }
        #expect(printed.compactMap { $0["i"] as? Int } == Array(0..<Self.count))
        #expect(printed.allSatisfy { ($0["s"] as? String)?.utf8.count == Self.payload })
        let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
        if !sanitized {
            #expect(peak - idle < Self.boundKiB, "grew by \(peak - idle) KiB above its idle \(idle) KiB")
        }
    }

    /// A field of `/proc/<pid>/status` of `peer`, in KiB.
    private static func memory(_ field: String, of peer: Peer) throws -> Int {
        let status = try procFile("/proc/\(peer.pid)/status")
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        return try #require(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) })
    }
}
