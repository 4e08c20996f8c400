import Foundation
import Synchronization
import Testing
@testable import Wormhole

/// Leases describe what is reserved now: a poster's lease gives back what it wrote once the record is in its
/// segment, stops counting once its poster is gone, and a file under a lease's name that is not a lease a poster
/// of this format wrote (a folder, a FIFO, a symbolic link, a file without a lease's header, one claiming more
/// than the cap) is skipped and counted, never a reason to refuse a post.
@Suite("Spool leases: what is reserved now, and planted ones")
struct SpoolLeaseTests {
    /// The paths Apple platforms take: no memory files, so a large post goes through the spool.
    static let applePaths = ["WORMHOLE_APPLE_PATHS": "1"]
    static let payload = 15_000_000

    @Test("ten 15 MB posts through the spool, one process each, to a listener that keeps up all arrive")
    func tenLargePostsToALiveListener() throws {
        let container = TemporaryContainer("leasesten")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { listener.signal(SIGKILL) }
        try listener.waitForLines(1)
        // Each poster has its payload built and waits for a signal: the posts then follow each other as fast as
        // the listener takes them, well within the 5 s a lease of the old kind counted for.
        let posters = try (0..<10).map { i in
            try Peer(
                "wormhole-test-peer",
                ["post", "--container", container.path, "--name", "big", "--start", "\(i)", "--payload", "\(Self.payload)",
                    "--on-signal"],
                environment: Self.applePaths)
        }
        for poster in posters { try poster.waitForLines(1, timeout: 60) }
        var arrived = 0
        for (i, poster) in posters.enumerated() {
            poster.signal(SIGUSR1)
            #expect(try poster.waitForExit(timeout: 60) == 0, "poster \(i): \(poster.errorOutput.suffix(3))")
            let report = poster.jsonLines().last ?? [:]
            #expect(report["spooled"] as? Int == 1, "post \(i): \(report) \(poster.errorOutput.suffix(3))")
            #expect(report["failed"] as? Int == 0, "post \(i): \(report)")
            // The listener keeps up: each post is in before the next one starts.
            if report["spooled"] as? Int == 1 { arrived += 1 }
            try listener.waitForLines(arrived + 1, timeout: 60)
        }
        let received = listener.jsonLines().compactMap { $0["blobBytes"] as? Int }
        #expect(received == Array(repeating: Self.payload, count: 10))
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == Array(0..<10))
    }
}
