// Wormhole between two hosts, played on this machine: two containers (one per host), a bridge for each in a
// `bridge-host` process of the benchmark's own, as `wormhole bridge` runs on a host, both connected to one NATS
// server. This process posts and observes in both groups, as the applications of the two hosts would: it posts
// `bench.ping` in A; its observer in B answers with `bench.pong` in B, which comes back through both bridges to
// its observer in A, which times the round trip and posts the next ping.
//
// The bridges run in processes of the benchmark's own rather than the `wormhole` tool's: `swift build --product
// wormhole-bench` builds the benchmark alone, so the tool's binary need not be next to it, and each bridge is a
// `WormholeBridge` as a program makes it, which is what the tool runs too.
import Foundation
import Synchronization
import Wormhole
import WormholeBridge
import WormholeRelay

final class BridgeWay {
    static let names = ["bench.ping", "bench.pong", "bench.burst"]
    private let a: GroupNotificationCenter
    private let b: GroupNotificationCenter
    private let hosts: [Process]
    private let loop = RoundTripLoop()
    private let arrivals = Arrivals()
    private var arrived = 0

    /// Starts a bridge for each container, in processes of their own, and returns once both are connected and
    /// have made their consumers (a consumer takes what is posted from then on).
    init(folder: String, server: String) throws {
        var hosts: [Process] = []
        var centers: [GroupNotificationCenter] = []
        do {
            for host in ["a", "b"] {
                let container = folder + "/host-" + host
                let ready = folder + "/host-" + host + ".ready"
                try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
                hosts.append(try spawnSelf(["bridge-host", "--container", container, "--server", server, "--ready", ready]))
                centers.append(try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container)))
                let deadline = Date().addingTimeInterval(30)
                while !FileManager.default.fileExists(atPath: ready) {
                    guard Date() < deadline, hosts.last?.isRunning == true else {
                        throw BenchError("the bridge of host \(host) did not connect to \(server) within 30 s")
                    }
                    usleep(10_000)
                }
            }
        } catch {
            hosts.forEach(stopProcess)
            throw error
        }
        self.hosts = hosts
        (a, b) = (centers[0], centers[1])
        let (loop, arrivals) = (loop, arrivals)
        // Weakly: the centers close when this is released, before the benchmark removes their containers.
        b.addObserver(forName: .init("bench.ping"), object: nil, queue: nil) { [weak b] _ in
            b?.post(name: .init("bench.pong"), object: nil, userInfo: nil)
        }
        a.addObserver(forName: .init("bench.pong"), object: nil, queue: nil) { [weak a] _ in
            if loop.arrived() { a?.post(name: .init("bench.ping"), object: nil, userInfo: nil) }
        }
        b.addObserver(forName: .init("bench.burst"), object: nil, queue: nil) { _ in arrivals.add() }
    }

    deinit { stop() }

    /// Stops both bridges' processes.
    func stop() {
        hosts.forEach(stopProcess)
    }

    /// `rounds` round trips from A to B and back; nil when one did not come back in time.
    func pingPong(rounds: Int) -> [UInt64]? {
        loop.run(rounds: rounds, seconds: 30 + Double(rounds) / 50) {
            a.post(name: .init("bench.ping"), object: nil, userInfo: nil)
        }
    }

    /// `count` notifications posted at once in A, a second, counted by the observer in B until all arrived; nil
    /// when they did not all arrive within a minute.
    func burst(count: Int) -> Double? {
        let start = monotonicNanoseconds()
        for _ in 0..<count { a.post(name: .init("bench.burst"), object: nil, userInfo: nil) }
        arrived += count
        guard arrivals.wait(until: arrived, seconds: 60) != nil else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    /// `bridge-host`: runs a bridge between `container` and `server` for the benchmark's names, as `wormhole bridge`
    /// does; writes the file `ready` once it is connected and has made its consumer, then runs until the benchmark
    /// is gone.
    static func host(container: String, server: String, ready: String) throws -> Never {
        guard let url = URL(string: server) else { throw BenchError("not a URL: \(server)") }
        let bridge = try WormholeBridge(
            containerURL: URL(fileURLWithPath: container), server: try NATSServerAddress(url: url),
            routes: names.map { .notifications(named: $0) })
        bridge.start()
        while bridge.status.connection != .connected { usleep(5_000) }
        _ = FileManager.default.createFile(atPath: ready, contents: nil)
        while true { sleep(1000) }
    }
}
