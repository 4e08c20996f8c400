import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeRelay
@testable import WormholeBridge

/// A bridge's life against what callers and servers do to it: a second bridge on the same container and identity
/// in another process, `close()` from several threads while the status is read, a bridge released without
/// `close()`, and a server stopped (SIGSTOP) while a publish waits on it.
@Suite(.serialized, .throttled, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeLifecycleTests {
    private let routes: [RelayRoute] = [.notifications(named: "n")]

    @Test("a second bridge on the same container and identity is refused, in this process and in another")
    func twoBridgesOnOneContainer() async throws {
        let server = try await NATSServer()
        let container = TemporaryContainer("twice")
        let tool = try Peer("wormhole", ["bridge", "-c", container.path, "--create", "--server", server.url, "n"])
        try await pollUntil("the tool's bridge connected") {
            tool.jsonLines().last?["connection"] as? String == "connected"
        }
        #expect {
            try WormholeBridge(containerURL: container.url, server: server.address, routes: routes)
        } throws: { ($0 as? WormholeError)?.code == .identityInUse }
        tool.signal(SIGTERM)
        #expect(try await tool.awaitExit() == 0)
        // Once it is gone, this process's bridge runs there; then the tool is refused.
        let bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes)
        bridge.start()
        try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        let second = try Peer("wormhole", ["bridge", "-c", container.path, "--server", server.url, "n"])
        #expect(try await second.awaitExit() != 0)
        #expect(second.errorOutput.contains { $0.contains("in use") }, "\(second.errorOutput)")
        bridge.close()
    }

    @Test("close() from several threads at once, while others read the status: each returns once the bridge stopped")
    func concurrentCloseWhileTheStatusIsRead() async throws {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: "n", routes: routes)
        let b = try BridgeTests.Host(observing: nil, routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        let bridge = try #require(a.bridge.withLock { $0 })
        for i in 1...200 { try b.post("n", i) }
        try await a.recorder.wait(for: 20)
        let reading = Atomic<Bool>(true)
        let reads = Atomic<Int>(0)
        for _ in 0..<2 {
            Thread {
                while reading.load(ordering: .relaxed) {
                    _ = bridge.status.description
                    reads.add(1, ordering: .relaxed)
                }
            }.start()
        }
        // Each closing thread notes what was posted when its close() returned.
        let seen = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask { try await onDispatchThread { bridge.close(); return bridge.status.posted } }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        try await Task.sleep(for: .milliseconds(500))
        reading.store(false, ordering: .relaxed)
        let final = bridge.status
        #expect(final.connection == .stopped)
        #expect(seen.allSatisfy { $0 == final.posted }, "posted when each close returned: \(seen), after: \(final.posted)")
        #expect(a.recorder.all.count == final.posted)
        #expect(reads.load(ordering: .relaxed) > 0)
        // Stopped for good: a bridge on the same container runs at once.
        a.bridge.withLock { $0 = nil }
        try await a.startBridge(server)
        try await a.recorder.wait(for: 200, timeout: 30)
    }

    @Test("a bridge released without close() stops, and leaves the container to the next")
    func releasedWithoutClose() async throws {
        let server = try await NATSServer()
        let container = TemporaryContainer("released")
        do {
            let bridge = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes)
            bridge.start()
            try await pollUntil("the bridge connected") { bridge.status.connection == .connected }
        }
        let next = try WormholeBridge(containerURL: container.url, server: server.address, routes: routes)
        next.start()
        try await pollUntil("the next bridge connected") { next.status.connection == .connected }
        next.close()
    }

    @Test("a bridge closed while it connects to a server that is not there, or before it starts, returns at once")
    func closedBeforeConnecting() async throws {
        let container = TemporaryContainer("unreached")
        let nowhere = NATSServerAddress(host: "127.0.0.1", port: 1)
        let unstarted = try WormholeBridge(containerURL: container.url, server: nowhere, routes: routes)
        unstarted.close()
        unstarted.start()
        #expect(unstarted.status.connection == .stopped)
        let bridge = try WormholeBridge(containerURL: container.url, server: nowhere, routes: routes)
        bridge.start()
        try await pollUntil("the refusal said") { bridge.status.lastError != nil }
        let start = ContinuousClock.now
        try await onDispatchThread { bridge.close() }
        // A bound only a close that hung passes, never a measure of speed on a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(bridge.status.connection == .stopped)
    }

    // MARK: A server that stops answering

    @Test("a server stopped while publishes wait holds close() a moment only, and the bridge goes on once it runs again")
    func stoppedServer() async throws {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: nil, routes: routes)
        let b = try BridgeTests.Host(observing: "n", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try a.post("n", 0)
        try await b.recorder.wait(for: 1)
        server.pause(true)
        // Large enough to fill the sockets' buffers: a write waits on the stopped server, not only a reply.
        for i in 1...6 { try a.post("n", i, payload: 600 << 10) }
        try await Task.sleep(for: .seconds(2))
        #expect(a.status?.sent == 1)
        let start = ContinuousClock.now
        try await onDispatchThread { a.closeBridge() }
        let took = ContinuousClock.now - start
        #expect(took < .seconds(30), "close took \(took)")
        // Started again while the server is still stopped, past the timeout: the bridge connects once it runs.
        let bridge = try WormholeBridge(containerURL: a.container.url, server: server.address, routes: routes)
        bridge.start()
        try await Task.sleep(for: .seconds(7))
        #expect(bridge.status.connection == .connecting)
        #expect(bridge.status.lastError != nil)
        server.pause(false)
        try await b.recorder.wait(for: 7, timeout: 40)
        #expect(b.recorder.all.map(\.number) == Array(0...6).map { Optional($0) })
        try await pollUntil("A's outbox emptied", timeout: 20) { bridge.status.waiting == 0 }
        bridge.close()
    }
}
