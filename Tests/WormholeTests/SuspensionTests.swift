import Foundation
import Testing
@testable import Wormhole

@Suite("Stopped and killed listeners", .throttled)
struct SuspensionTests {
    @Test("a stopped listener gets everything, in order, after it resumes; posting never waits for it")
    func stoppedListener() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "stop", "--count", "3000"])
        try await listener.awaitLines(1)
        try listener.suspend()

        let center = try GroupNotificationCenter(containerURL: container.url)
        // Were posting to wait for the stopped process, this loop would never end and the test would time out.
        var spooled = 0
        var delivered = 0
        for i in 0..<3000 {
            let report = try center.postReporting(name: .init("stop"), object: nil, userInfo: ["i": i])
            spooled += report.spooled
            delivered += report.delivered
            #expect(report.failures.isEmpty)
        }
        #expect(delivered + spooled == 3000)
        #expect(spooled > 0, "the socket buffer fills and the rest goes to the spool")
        let status = try #require(center.listenerStatus().first)
        #expect(status.state == .stopped)
        #expect(status.spooledNotifications == spooled)

        listener.signal(SIGCONT)
        #expect(try await listener.awaitExit(timeout: 30) == 0)
        let numbers = listener.jsonLines().compactMap { $0["i"] as? Int }.filter { $0 >= 0 }
        #expect(numbers == Array(0..<3000), "everything arrives once, in posting order, across socket and spool")
    }

    @Test("a stopped listener gets payloads over the socket's limit (shared memory files or the spool) in order with small ones")
    func largeAndSmallInterleaved() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "mix", "--count", "40"])
        try await listener.awaitLines(1)
        try listener.suspend()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<40 {
            var info: [AnyHashable: Any] = ["i": i]
            if i % 5 == 0 { info["blob"] = Data(repeating: UInt8(i), count: 200_000) }
            try center.postReporting(name: .init("mix"), object: nil, userInfo: info)
        }
        listener.signal(SIGCONT)
        #expect(try await listener.awaitExit(timeout: 30) == 0)
        let lines = listener.jsonLines().filter { $0["i"] != nil }
        #expect(lines.compactMap { $0["i"] as? Int } == Array(0..<40))
        #expect(lines.filter { $0["blobBytes"] as? Int == 200_000 }.count == 8)
    }

    @Test("a killed listener is removed by the next post that finds it dead; others are undisturbed")
    func killedListener() async throws {
        let container = TemporaryContainer()
        let doomed = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "k"])
        let survivor = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "k", "--count", "1"])
        try await doomed.awaitLines(1)
        try await survivor.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.listenerStatus().count == 2)
        let doomedEntry = try #require(center.listenerStatus().first { $0.pid == doomed.pid })

        doomed.signal(SIGKILL)
        _ = try? await doomed.awaitExit()
        #expect(center.listenerStatus().first { $0.pid == doomed.pid }?.state == .dead)

        let report = try center.postReporting(name: .init("k"), object: nil, userInfo: ["i": 1])
        #expect(report.delivered == 1)
        #expect(report.removedDeadListeners == 1)
        #expect(report.failures.isEmpty)
        #expect(center.listenerStatus().map(\.pid) == [survivor.pid])
        #expect(!FileManager.default.fileExists(atPath: doomedEntry.socketPath))
        #expect(!FileManager.default.fileExists(atPath: container.path + "/spool/\(doomedEntry.identifier).spool"))
        #expect(try await survivor.awaitExit() == 0)
        #expect(center.statistics.listenersRemoved == 1)
    }

    @Test("a new listener collects the entries of dead ones when it registers")
    func registrationCollectsDead() async throws {
        let container = TemporaryContainer()
        let peers = try (0..<3).map { _ in
            try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "gc"])
        }
        for peer in peers { try await peer.awaitLines(1) }
        for peer in peers {
            peer.signal(SIGKILL)
            _ = try? await peer.awaitExit()
        }
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.listenerStatus().map(\.state) == [.dead, .dead, .dead])
        center.addObserver(forName: .init("gc"), object: nil, queue: nil) { _ in }
        #expect(center.listenerStatus().map(\.pid) == [getpid()])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: container.path + "/listeners")
        #expect(leftovers.count == 1)
    }
}
