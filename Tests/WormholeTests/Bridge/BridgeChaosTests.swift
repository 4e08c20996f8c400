import Foundation
import Synchronization
import Testing
import Wormhole
@testable import WormholeBridge

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

        func startBridge(_ server: NATSServer, replicas: Int = 1) throws {
            let peer = try Peer(
                "wormhole",
                ["bridge", "-c", container.path, "--server", server.url, "--replicas", String(replicas), "--value", "chaos.v", "chaos.n"])
            process.withLock { $0 = peer }
            starts.add(1, ordering: .relaxed)
        }

        /// Stops (SIGSTOP) or resumes (SIGCONT) the bridge process.
        func signalBridge(_ number: Int32) {
            process.withLock { $0?.signal(number) }
        }

        func killBridge() {
            guard let peer = process.withLock({ peer in defer { peer = nil }; return peer }) else { return }
            peer.signal(SIGKILL)
            _ = try? peer.waitForExit(timeout: 10)
        }

        /// What its bridge printed last, for a failure's message.
        var lastWords: String {
            guard let peer = process.withLock({ $0 }) else { return "no bridge running" }
            return "status \(peer.output.suffix(2)); errors \(peer.errorOutput.suffix(6))"
        }


        /// Numbers that came from `sender`, in order of arrival.
        func received(from sender: String) -> [Int] {
            recorder.all.filter { $0.object == sender }.compactMap(\.number)
        }

        deinit {
            killBridge()
        }
    }

    /// Waits until each host's bridge saved its state, which it does once connected, then a moment more.
    private func connected(_ hosts: [Host]) async throws {
        // Each consumer exists before the first post: a host's consumer takes what is posted from its making on.
        try await pollUntil("every bridge connected", timeout: 60) {
            hosts.allSatisfy { FileManager.default.fileExists(atPath: $0.container.path + "/bridge/wormhole.bridge/state") }
        }
        try await Task.sleep(for: .seconds(2))
    }

    @Test func aHostStoppedPastTheAckWaitAndASlowHostLoseNothingAndRepeatNothing() async throws {
        let server = try await NATSServer()
        let a = try Host()
        let b = try Host()
        // B's group is slow: an observer that takes 3 ms a notification holds its receive thread, so what its
        // bridge posts piles up in B's socket and spool.
        _ = b.center.addObserver(forName: Notification.Name("chaos.n"), object: nil, queue: nil) { _ in usleep(3_000) }
        try a.startBridge(server)
        try b.startBridge(server)
        try await connected([a, b])
        let count = 400
        for i in 0..<count / 2 {
            try a.center.postReporting(name: Notification.Name("chaos.n"), object: "a", userInfo: ["i": i])
        }
        // B's bridge stopped in the middle of the stream, longer than the server waits for an acknowledgement
        // (3 s): the server hands the message it waits on over again, to a bridge that cannot take it yet.
        try await pollUntil("B's bridge posted some", timeout: 60) { !b.received(from: "a").isEmpty }
        b.signalBridge(SIGSTOP)
        for i in count / 2..<count {
            try a.center.postReporting(name: Notification.Name("chaos.n"), object: "a", userInfo: ["i": i])
        }
        try await Task.sleep(for: .seconds(5))
        b.signalBridge(SIGCONT)
        try await pollUntil("every notification arrived", timeout: 120) { Set(b.received(from: "a")).count == count }
        // A moment for a late copy to show itself.
        try await Task.sleep(for: .seconds(1))
        let got = b.received(from: "a")
        let duplicated = got.count - Set(got).count
        let outOfOrder = zip(got, got.dropFirst()).count { $0 >= $1 }
        #expect(duplicated == 0 && outOfOrder == 0, "duplicated \(duplicated), out of order \(outOfOrder); \(b.lastWords)")
    }

    @Test func killedBridgesAndAKilledServerLoseNothingAndRepeatNothing() async throws {
        let server = try await NATSServer()
        let a = try Host()
        let b = try Host()
        try a.startBridge(server)
        try b.startBridge(server)
        try await connected([a, b])
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

    @Test func threeHostsOverAClusterLosingItsLeaderLoseNothingAndRepeatNothing() async throws {
        let cluster = try await NATSCluster()
        let hosts = try (0..<3).map { _ in try Host() }
        let names = ["a", "b", "c"]
        for (index, host) in hosts.enumerated() { try host.startBridge(cluster.servers[index], replicas: 3) }
        try await pollUntil("every bridge made its consumer", timeout: 90) {
            hosts.allSatisfy { host in
                host.recorder.all.isEmpty
                    && FileManager.default.fileExists(atPath: host.container.path + "/bridge/wormhole.bridge/state")
            } && consumers(cluster) >= 3
        }
        let perHost = 150
        let serverKills = Atomic<Int>(0)
        let leaderKills = Atomic<Int>(0)
        let chaos = Task {
            var generator = SystemRandomNumberGenerator()
            var rounds = 0
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(Int.random(in: 200...500, using: &generator)))
                rounds += 1
                if rounds % 6 == 0 {
                    // The stream's leader when one is known, else any server: killed, and started again a moment
                    // later on its store.
                    let leader = streamLeader(cluster)
                    let index = leader ?? Int.random(in: 0..<3, using: &generator)
                    cluster.servers[index].kill()
                    serverKills.add(1, ordering: .relaxed)
                    if leader != nil { leaderKills.add(1, ordering: .relaxed) }
                    try await Task.sleep(for: .milliseconds(800))
                    try await cluster.servers[index].start()
                } else {
                    let index = Int.random(in: 0..<3, using: &generator)
                    hosts[index].killBridge()
                    try hosts[index].startBridge(cluster.servers[index], replicas: 3)
                }
            }
        }
        let values = hosts.map { GroupValue("chaos.v", default: 0, in: $0.center) }
        for i in 0..<perHost {
            for (index, host) in hosts.enumerated() {
                try host.center.postReporting(name: Notification.Name("chaos.n"), object: names[index], userInfo: ["i": i])
                // Now and then, a group value written on this host.
                if i % 15 == index * 5 { values[index].value = i * 10 + index }
            }
            try await Task.sleep(for: .milliseconds(40))
        }
        chaos.cancel()
        _ = await chaos.result
        for (index, host) in hosts.enumerated() {
            if !cluster.servers[index].isRunning { try await cluster.servers[index].start() }
            host.killBridge()
            try host.startBridge(cluster.servers[index], replicas: 3)
        }
        do {
            try await pollUntil("every notification arrived on every host", timeout: 180) {
                hosts.enumerated().allSatisfy { index, host in
                    names.enumerated().allSatisfy { sender, name in sender == index || Set(host.received(from: name)).count == perHost }
                }
            }
        } catch {
            for (index, host) in hosts.enumerated() {
                let counts = names.map { "\($0): \(Set(host.received(from: $0)).count) missing \(Set(0..<perHost).subtracting(host.received(from: $0)).sorted())" }.joined(separator: ", ")
                Issue.record("host \(names[index]) has \(counts); \(host.lastWords)")
            }
            throw error
        }
        try await pollUntil("the group value agrees on every host", timeout: 60) {
            Set(values.map(\.value)).count == 1
        }
        try await Task.sleep(for: .seconds(1))
        var totals = (lost: 0, duplicated: 0, outOfOrder: 0)
        for (index, host) in hosts.enumerated() {
            for (sender, name) in names.enumerated() where sender != index {
                let got = host.received(from: name)
                totals.lost += perHost - Set(got).count
                totals.duplicated += got.count - Set(got).count
                totals.outOfOrder += zip(got, got.dropFirst()).count { $0 >= $1 }
            }
            // Nothing of its own came back.
            #expect(host.received(from: names[index]).count == perHost)
        }
        let starts = hosts.reduce(0) { $0 + $1.starts.load(ordering: .relaxed) }
        print("bridge cluster chaos: 3 hosts, \(perHost) notifications from each; bridges started \(starts) times, servers killed \(serverKills.load(ordering: .relaxed)) times (\(leaderKills.load(ordering: .relaxed)) a stream leader); lost \(totals.lost), duplicated \(totals.duplicated), out of order \(totals.outOfOrder); the group value \(values[0].value) on every host")
        #expect(totals.lost == 0 && totals.duplicated == 0 && totals.outOfOrder == 0)
        #expect(serverKills.load(ordering: .relaxed) >= 1)
    }
}

/// The index of the server leading the bridges' stream, asked of the first server that answers; nil when none
/// knows.
private func streamLeader(_ cluster: NATSCluster) -> Int? {
    streamInfo(cluster)?.cluster?.leader.flatMap { cluster.index(named: $0) }
}

/// How many consumers the bridges' stream has, as the first server that answers says; 0 when none does.
private func consumers(_ cluster: NATSCluster) -> Int {
    streamInfo(cluster)?.state?.consumerCount ?? 0
}

private struct StreamInfo: Decodable {
    struct Cluster: Decodable { var leader: String? }
    struct State: Decodable { var consumerCount: Int? }
    var cluster: Cluster?
    var state: State?
}

private func streamInfo(_ cluster: NATSCluster) -> StreamInfo? {
    for server in cluster.servers where server.isRunning {
        guard let connection = try? NATSConnection.open(server.address, name: "test", timeout: .seconds(2)) else { continue }
        defer { connection.close(BridgeError("done")) }
        guard let reply = try? connection.request("$JS.API.STREAM.INFO.WORMHOLE_WORMHOLE", payload: [], timeout: .seconds(2)),
            let info = try? JetStream.decode(StreamInfo.self, reply.payload, what: "stream info")
        else { continue }
        return info
    }
    return nil
}
