import Foundation
import Testing
@testable import Wormhole

/// What waits for an async sequence's consumer or for the main actor counts in the listener's backlog by its
/// frame's bytes, whatever the payload's shape: a consumer that falls behind makes the listener stop reading, and
/// posters spool. Nothing is lost or reordered.
@Suite("Slow consumers: sequences and the main actor cannot swell their listener", .serialized, .throttled)
struct SlowConsumerTests {
    /// A form of observer, and the shape of the payload posted to it.
    struct Case: CustomTestStringConvertible, Sendable {
        let form: String
        let shape: String
        var testDescription: String { "\(form), \(shape) payload" }
    }

    @Test(
        "1,200 posts of 100 KB to a consumer that takes nothing yet: the listener stays within its bound, then gets all, in order",
        arguments: [
            Case(form: "sequence", shape: "top"), Case(form: "sequence", shape: "nested"),
            Case(form: "messages", shape: "typed"), Case(form: "main", shape: "top"), Case(form: "main", shape: "nested"),
            Case(form: "main", shape: "typed"),
        ])
    func slowConsumer(_ test: Case) async throws {
        let container = TemporaryContainer()
        let count = 1200
        let payload = 100_000
        let name = test.shape == "typed" ? "test.blob" : "slow"
        let listener = try Peer("wormhole-test-peer", [
            "listen-slow", "--container", container.path, "--name", name, "--form", test.form, "--shape", test.shape,
            "--count", "\(count)",
        ])
        let ready = try await lines(listener, 1)
        let baseline = try #require(ready.first?["residentKiB"] as? Int)
        let poster = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", name, "--count", "\(count)", "--payload", "\(payload)",
            "--shape", test.shape,
        ])
        #expect(try await exitStatus(poster, timeout: 240) == 0, "poster: \(poster.errorOutput)")
        let report = try #require(poster.jsonLines().first)
        #expect(report["failed"] as? Int == 0, "\(report)")
        // 120 MB posted to a consumer that took nothing: the listener stopped at its bound, the rest spooled.
        #expect((report["spooled"] as? Int ?? 0) > count / 2, "spooled: \(report)")
        listener.signal(SIGUSR1)
        #expect(try await exitStatus(listener, timeout: 240) == 0, "listener: \(listener.errorOutput)")
        let summary = try #require(listener.jsonLines().last)
        #expect(summary["received"] as? Int == count)
        #expect(summary["inOrder"] as? Bool == true)
        #expect(summary["blobBytes"] as? Int == count * payload)
        // The bound is 16 MiB of frames, what they decode to about as much again, and one read (a spool chunk
        // of 8 MiB); without it, all 120 MB.
        let peak = try #require(summary["peakResidentKiB"] as? Int)
        if summary["sanitized"] as? Bool != true {
            #expect(peak - baseline < 64 << 10, "grew by \((peak - baseline) >> 10) MiB")
        }
    }

    @Test("removing a main-actor observer with notifications waiting, token kept, leaves the listener reading for its other observers")
    func removedWhileWaiting() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", [
            "remove-waiting", "--container", container.path, "--name", "held", "--also", "other",
        ])
        _ = try await lines(listener, 1)
        // 24 MB for a main actor that never runs: past the backlog's bound, the listener stops reading.
        let poster = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", "held", "--count", "6000", "--payload", "4096",
        ])
        #expect(try await exitStatus(poster, timeout: 120) == 0, "poster: \(poster.errorOutput)")
        #expect((poster.jsonLines().first?["spooled"] as? Int ?? 0) > 0, "\(poster.jsonLines())")
        listener.signal(SIGUSR1)
        _ = try await lines(listener, 2)
        let later = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "other", "--count", "20"])
        #expect(try await exitStatus(later) == 0, "poster: \(later.errorOutput)")
        let all = try await lines(listener, 22, timeout: 120)
        #expect(all.compactMap { $0["also"] as? Int } == Array(0..<20))
        #expect(!all.contains { $0["mainActor"] != nil })
    }

    @Test("a tool whose main thread sleeps is told that its main-actor observer waits")
    func mainThreadSleeps() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["main-sleeps", "--container", container.path, "--name", "m"])
        _ = try await lines(listener, 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "m", "--count", "3"])
        #expect(try await exitStatus(poster) == 0)
        try await listener.awaitError(containing: "for the main actor, which runs nothing", timeout: 60)
        let warning = listener.errorOutput.filter { $0.contains("runs nothing") }
        #expect(warning.count == 1)
        #expect(warning.first?.contains("dispatchMain()") == true && warning.first?.contains("queue:") == true)
        #expect(listener.jsonLines().count == 1, "the block never ran: \(listener.output)")
    }

    @Test("the warning comes also when the main-actor observer that first waited is removed, and another waits on")
    func mainThreadSleepsFirstObserverRemoved() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", [
            "main-sleeps", "--container", container.path, "--name", "m", "--also", "later",
        ])
        _ = try await lines(listener, 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "m"])
        #expect(try await exitStatus(poster) == 0)
        let later = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "later"])
        #expect(try await exitStatus(later) == 0)
        try await listener.awaitError(containing: "for the main actor, which runs nothing", timeout: 30)
        #expect(listener.errorOutput.filter { $0.contains("runs nothing") }.count == 1)
        #expect(listener.jsonLines().count == 1, "no block ran: \(listener.output)")
    }
}

/// The exit status of `peer`, waited for off the caller's thread.
private func exitStatus(_ peer: Peer, timeout: Double = 60) async throws -> Int32 {
    try await peer.awaitExit(timeout: timeout)
}

/// The first `count` output lines of `peer` as JSON objects, waited for off the caller's thread.
private func lines(_ peer: Peer, _ count: Int, timeout: Double = 20) async throws -> [[String: Any]] {
    _ = try await peer.awaitLines(count, timeout: timeout)
    return peer.jsonLines()
}
