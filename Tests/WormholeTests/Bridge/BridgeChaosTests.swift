import Foundation
import Synchronization
import Testing
import Wormhole

/// Two hosts post to each other through their bridges, `wormhole bridge` processes killed (SIGKILL) and started
/// again at random, and the server killed and started again on its store, while both post: every notification
/// arrives once, in its poster's order.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeChaosTests {
    /// One host: its container, an observer counting what comes, and its bridge process, started anew at will.
    final class Host: Sendable {
        let container = TemporaryContainer("chaos-host")
        let center: GroupNotificationCenter
        let recorder = Recorder()
        private let process = Mutex<Peer?>(nil)
        let starts = Atomic<Int>(0)

        init() throws {
            center = try GroupNotificationCenter(containerURL: container.url)
            // Observes for as long as the center lives.
            _ = center.addObserver(forName: Notification.Name("chaos.n"), object: nil, queue: nil, using: recorder.block)
        }

        func startBridge(_ server: NATSServer) throws {
            let peer = try Peer("wormhole", ["bridge", "-c", container.path, "--server", server.url, "chaos.n"])
            process.withLock { $0 = peer }
            starts.add(1, ordering: .relaxed)
        }

        func killBridge() {
            guard let peer = process.withLock({ peer in defer { peer = nil }; return peer }) else { return }
            peer.signal(SIGKILL)
            _ = try? peer.waitForExit(timeout: 10)
        }

        /// Numbers that came from `sender`, in order of arrival.
        func received(from sender: String) -> [Int] {
            recorder.all.filter { $0.object == sender }.compactMap(\.number)
        }

        deinit {
            killBridge()
        }
    }

    @Test func killedBridgesAndAKilledServerLoseNothingAndRepeatNothing() async throws {
        let server = try await NATSServer()
        let a = try Host()
        let b = try Host()
        try a.startBridge(server)
        try b.startBridge(server)
        // Both consumers exist before the first post: a host's consumer takes what is posted from its making on.
        try await pollUntil("both bridges connected", timeout: 60) {
            FileManager.default.fileExists(atPath: a.container.path + "/bridge/wormhole.bridge/state")
                && FileManager.default.fileExists(atPath: b.container.path + "/bridge/wormhole.bridge/state")
        }
        try await Task.sleep(for: .seconds(2))
        let perHost = 300
        let serverKills = Atomic<Int>(0)
        let chaos = Task {
            var generator = SystemRandomNumberGenerator()
            var rounds = 0
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(Int.random(in: 150...500, using: &generator)))
                rounds += 1
                if rounds % 7 == 0 {
                    server.kill()
                    serverKills.add(1, ordering: .relaxed)
                    try await Task.sleep(for: .milliseconds(300))
                    try await server.start()
                } else {
                    let host = Bool.random(using: &generator) ? a : b
                    host.killBridge()
                    try host.startBridge(server)
                }
            }
        }
        for i in 0..<perHost {
            try a.center.postReporting(name: Notification.Name("chaos.n"), object: "a", userInfo: ["i": i])
            try b.center.postReporting(name: Notification.Name("chaos.n"), object: "b", userInfo: ["i": i])
            try await Task.sleep(for: .milliseconds(25))
        }
        chaos.cancel()
        _ = await chaos.result
        try? await server.start()
        // Running again, both, to the end.
        for host in [a, b] {
            host.killBridge()
            try host.startBridge(server)
        }
        try await pollUntil("every notification arrived", timeout: 120) {
            Set(a.received(from: "b")).count == perHost && Set(b.received(from: "a")).count == perHost
        }
        // A moment for a late copy to show itself.
        try await Task.sleep(for: .seconds(1))
        for (host, sender) in [(b, "a"), (a, "b")] {
            let got = host.received(from: sender)
            let lost = perHost - Set(got).count
            let duplicated = got.count - Set(got).count
            let outOfOrder = zip(got, got.dropFirst()).count { $0 >= $1 }
            #expect(lost == 0 && duplicated == 0 && outOfOrder == 0, "from \(sender): lost \(lost), duplicated \(duplicated), out of order \(outOfOrder)")
        }
        let starts = a.starts.load(ordering: .relaxed) + b.starts.load(ordering: .relaxed)
        print("bridge chaos: \(perHost) notifications each way; bridges started \(starts) times, the server killed \(serverKills.load(ordering: .relaxed)) times")
        #expect(starts > 10)
    }
}
