// The cost of a post as the registry grows: listeners that observe other names must not slow it down.
import Foundation
import Wormhole

enum RegistryGrowth {
    static let sizes = [1, 16, 256]

    /// A crowd: `count` listeners in one process (durable centers, each a listener of its own), each observing
    /// a name nobody posts; says "crowd-ready" once all are registered.
    static func crowd(container: String, count: Int) throws -> Never {
        let url = URL(fileURLWithPath: container)
        var centers: [GroupNotificationCenter] = []
        for index in 0..<count {
            let center = try GroupNotificationCenter(containerURL: url, clientIdentifier: "crowd-\(index)")
            center.addObserver(forName: .init("other-\(index)"), object: nil, queue: nil) { _ in }
            centers.append(center)
        }
        centers.first?.post(name: .init("crowd-ready"), object: nil)
        while true { sleep(1000) }
    }

    /// p50 and p99 of `post` to one receiver in three containers that also hold 1, 16 and 256 listeners of other
    /// names, every process on `transport`. The containers take turns, five rounds, so that drift in the
    /// machine falls on all three alike.
    static func measure(folder: String, posts: Int, transport: Transport) throws -> [(listeners: Int, cost: Percentiles)] {
        var crowds: [Process] = []
        defer { crowds.forEach(stopProcess) }
        var ways: [WormholeWay] = []
        for size in sizes {
            let container = folder + "/growth-\(transport)-\(size)"
            let way = try WormholeWay(container: container, transport: transport)
            let ready = Arrivals()
            way.center.addObserver(forName: .init("crowd-ready"), object: nil, queue: nil) { _ in ready.add() }
            crowds.append(try spawnSelf(["crowd", "--container", container, "--count", String(size)], transport: transport))
            guard ready.wait(until: 1, seconds: 120) != nil else { throw BenchError("a crowd did not start") }
            _ = way.flood(Payload.all[0], count: 100)  // The first post after a change reads the registry.
            ways.append(way)
        }
        var samples = sizes.map { _ in [UInt64]() }
        for _ in 0..<5 {
            for (index, way) in ways.enumerated() { samples[index] += way.chunkedPostCosts(posts / 5) }
        }
        return zip(sizes, samples).compactMap { size, samples in Percentiles(nanoseconds: samples).map { (size, $0) } }
    }
}
