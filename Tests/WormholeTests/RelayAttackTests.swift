import Foundation
import Testing
import Wormhole
import WormholeTestSupport

/// Hostile or damaged files in a running relay's folder, across processes: the relay neither wedges nor stops.
@Suite("Relay attacks", .serialized, .throttled)
struct RelayAttackTests {
    @Test("A FIFO planted as the posted log after the relay started does not wedge it", .timeLimit(.minutes(10)))
    func fifoPostedLogWhileRunning() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let observer = try await pair.startObserver(.watch, name: "n")
        let watchRelay = try await pair.startRelay(.watch)
        // Started: the log was emptied and removed; the first post opens it anew.
        let log = pair.watch.url.appendingPathComponent("relay/wormhole.relay/posted")
        #expect(!FileManager.default.fileExists(atPath: log.path))
        #expect(mkfifo(log.path, 0o600) == 0)
        let phoneRelay = try await pair.startRelay(.phone)
        let poster = try await pair.post(.phone, name: "n", count: 5)
        _ = try? await observer.awaitLines(6, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<5)])
        _ = (phoneRelay, watchRelay)
    }

    @Test("A directory in place of the state file does not keep the relay from starting", .timeLimit(.minutes(10)))
    func directoryAsState() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let folder = pair.phone.url.appendingPathComponent("relay/wormhole.relay")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("state/inside"), withIntermediateDirectories: true)
        let observer = try await pair.startObserver(.watch, name: "n")
        let phoneRelay = try Peer("wormhole-relay-peer", [
            "--container", pair.phone.path, "--link", pair.link.path, "--side", "phone", "--route", "notifications:n",
        ])
        _ = try? await phoneRelay.awaitLines(1, timeout: 20)
        #expect(phoneRelay.jsonLines().count >= 1, "the relay did not start")
        let watchRelay = try await pair.startRelay(.watch)
        let poster = try await pair.post(.phone, name: "n", count: 3)
        _ = try? await observer.awaitLines(4, timeout: 30)
        #expect(RelayPair.received(by: observer) == [poster: Array(0..<3)])
        _ = watchRelay
    }

    @Test("A damaged state while the outbox holds items does not stop what follows from crossing", .timeLimit(.minutes(10)))
    func damagedStateWithOutbox() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let observer = try await pair.startObserver(.watch, name: "n")
        var phoneRelay = try await pair.startRelay(.phone)
        var watchRelay = try await pair.startRelay(.watch)
        let first = try await pair.post(.phone, name: "n", count: 2)
        try await observer.awaitLines(3, timeout: 30)
        try await pollUntil("the phone's outbox acknowledged", timeout: 30) { RelayPair.lastStatus(of: phoneRelay)?["waiting"] as? Int == 0 }
        watchRelay.signal(SIGKILL)
        _ = try await watchRelay.awaitExit()
        let second = try await pair.post(.phone, name: "n", count: 3, start: 2)
        try await pollUntil("three wait on the phone", timeout: 30) { RelayPair.lastStatus(of: phoneRelay)?["waiting"] as? Int == 3 }
        phoneRelay.signal(SIGKILL)
        _ = try await phoneRelay.awaitExit()
        try Data("damaged".utf8).write(to: pair.phone.url.appendingPathComponent("relay/wormhole.relay/state"))
        phoneRelay = try await pair.startRelay(.phone)
        watchRelay = try await pair.startRelay(.watch)
        let last = try await pair.post(.phone, name: "n", count: 1, start: 5)
        try await pollUntil("the last one crossed", timeout: 30) { RelayPair.received(by: observer)[last] == [5] }
        let received = RelayPair.received(by: observer)
        #expect(received[first] == [0, 1])
        // Those waiting when the state was lost may come twice (the state said what was sent), never not at all.
        #expect(Set(received[second] ?? []) == [2, 3, 4])
        _ = (phoneRelay, watchRelay)
    }
}
