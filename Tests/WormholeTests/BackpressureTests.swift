import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A listener whose observers run on a queue that does not keep up holds a bounded backlog: past it, it stops
/// reading, and the socket, then the spool, hold the rest. Nothing is lost or reordered.
@Suite("Backpressure: a slow observer cannot swell its listener", .throttled)
struct BackpressureTests {
    @Test("20,000 posts of 4 KiB to an observer whose queue is suspended: the listener stays within its bound, then gets all, in order")
    func manySmallPosts() async throws {
        let container = TemporaryContainer()
        let count = 20_000
        let listener = try Peer("wormhole-test-peer", ["listen-queued", "--container", container.path, "--name", "slow", "--count", "\(count)"])
        _ = try await listener.awaitLines(1)
        let baseline = try #require(listener.jsonLines().first?["residentKiB"] as? Int)
        let poster = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", "slow", "--count", "\(count)", "--payload", "4096",
        ])
        #expect(try await poster.awaitExit(timeout: 120) == 0, "poster: \(poster.errorOutput)")
        let report = try #require(poster.jsonLines().first)
        #expect(report["failed"] as? Int == 0)
        // Most of it waits in the spool: the listener stopped reading.
        #expect((report["spooled"] as? Int ?? 0) > count / 2, "spooled: \(report)")
        listener.signal(SIGUSR1)
        #expect(try await listener.awaitExit(timeout: 120) == 0, "listener: \(listener.errorOutput)")
        let summary = try #require(listener.jsonLines().last)
        #expect(summary["received"] as? Int == count)
        #expect(summary["inOrder"] as? Bool == true)
        #expect(summary["blobBytes"] as? Int == count * 4096)
        // 80 MB posted; the backlog bound is 16 MiB of frames, what they decode to about as much again.
        let peak = try #require(summary["peakResidentKiB"] as? Int)
        if summary["sanitized"] as? Bool != true {
            #expect(peak - baseline < 64 << 10, "grew by \((peak - baseline) >> 10) MiB")
        }
    }

    @Test("12 posts of 8 MB as shared memory files to a suspended observer: the listener maps at most its bound, then gets all, in order")
    func largeSharedFrames() async throws {
        let container = TemporaryContainer()
        let count = 12
        let payload = 8_000_000
        let listener = try Peer("wormhole-test-peer", ["listen-queued", "--container", container.path, "--name", "large", "--count", "\(count)"])
        _ = try await listener.awaitLines(1)
        let poster = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", "large", "--count", "\(count)", "--payload", "\(payload)",
        ])
        #expect(try await poster.awaitExit(timeout: 120) == 0, "poster: \(poster.errorOutput)")
        #expect(poster.jsonLines().first?["failed"] as? Int == 0)
        listener.signal(SIGUSR1)
        let held = try #require(try await listener.awaitLines(2)[1].data(using: .utf8).flatMap {
            try JSONSerialization.jsonObject(with: $0) as? [String: Any]
        })
        let mapped = try #require(held["mappedSharedBytes"] as? Int)
        // 96 MB posted; the bound is 16 MiB, passed by at most one 8 MB frame (without a bound, all 96 MB).
        #expect(DeliveryBacklog.Bound.standard.bytes == 16 << 20)
        #expect(mapped <= (16 << 20) + payload + (1 << 20), "mapped \(mapped >> 20) MiB")
        #expect(try await listener.awaitExit(timeout: 120) == 0, "listener: \(listener.errorOutput)")
        let summary = try #require(listener.jsonLines().last)
        #expect(summary["received"] as? Int == count)
        #expect(summary["inOrder"] as? Bool == true)
        #expect(summary["blobBytes"] as? Int == count * payload)
    }
}
