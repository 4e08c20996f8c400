// The cost of a post as the registry grows: listeners that observe other names must not slow it down.
import Foundation
import Wormhole

enum RegistryGrowth {
    /// A crowd: `count` listeners in one process (durable centers, each a listener of its own), each observing
    /// a name nobody posts; says "crowd-ready" once all are registered.
    static func crowd(container: String, first: Int, count: Int) throws -> Never {
        let url = URL(fileURLWithPath: container)
        var centers: [GroupNotificationCenter] = []
        for index in first..<(first + count) {
            let center = try GroupNotificationCenter(containerURL: url, clientIdentifier: "crowd-\(index)")
            center.addObserver(forName: .init("other-\(index)"), object: nil, queue: nil) { _ in }
            centers.append(center)
        }
        centers.first?.post(name: .init("crowd-ready"), object: nil)
        while true { sleep(1000) }
    }

    /// p50 and p99 of `post` to the echo peer, with 1, 16 and 256 other listeners registered.
    static func measure(_ way: WormholeWay, container: String, posts: Int) throws -> [(listeners: Int, cost: Percentiles)] {
        let ready = Arrivals()
        way.center.addObserver(forName: .init("crowd-ready"), object: nil, queue: nil) { _ in ready.add() }
        var crowds: [Process] = []
        defer { crowds.forEach { $0.terminate() } }
        var results: [(Int, Percentiles)] = []
        var registered = 0
        for size in [1, 16, 256] {
            crowds.append(try spawnSelf(["crowd", "--container", container, "--first", String(registered), "--count", String(size - registered)]))
            registered = size
            guard ready.wait(until: crowds.count, seconds: 120) != nil else { throw BenchError("a crowd did not start") }
            _ = way.flood(Payload.all[0], count: 100)  // The first post after a change reads the registry.
            let samples = way.timedPosts(posts)
            guard way.awaitFlood(seconds: 120) else { throw BenchError("the peer did not get every post") }
            if let cost = Percentiles(nanoseconds: samples) { results.append((size, cost)) }
        }
        return results
    }
}
