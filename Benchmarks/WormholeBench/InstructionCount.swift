// A fixed number of ping-pong rounds and nothing else, for counting instructions with valgrind's callgrind. The
// peer is started by hand, since Foundation's Process cannot start one under valgrind (EBADF):
//
//     valgrind --tool=callgrind wormhole-bench --ping-pong ROUNDS --container DIR [--payload none|3-key|1mib] &
//     (once its socket is there) valgrind --tool=callgrind wormhole-bench wormhole-peer --container DIR &
//     (once the first has ended) kill -TERM <the peer>
//
// The peer's transport is WORMHOLE_TRANSPORT's, this side's `--transport`'s (both seqpacket by default). Run it
// with two numbers of rounds, add up the instructions of both processes for each, subtract and divide by twice
// the difference in rounds: every round is two notifications, each posted by one process and received by the
// other, so the result is what one notification costs its poster and its listener together. Setting up,
// starting and ending cancel out.
import Foundation
@_spi(Benchmarking) import Wormhole

enum InstructionCount {
    /// The payloads this mode posts, by the name `--payload` gives.
    static let payloads: [String: Payload] = [
        "none": Payload("no userInfo", nil, divisor: 1),
        "3-key": Payload("3-key", ["id": 42, "name": "cart", "tags": ["a", "b"]], divisor: 1),
        "1mib": Payload("1 MiB Data", ["data": Data(count: 1024 * 1024)], divisor: 1),
    ]

    /// Waits for the peer's "ready", runs one round and then `rounds` rounds with the payload `--payload`
    /// names, and ends the process.
    static func run(rounds: Int, container: String) throws -> Never {
        guard let payload = payloads[option("--payload") ?? "3-key"] else {
            throw BenchError("--payload takes one of \(payloads.keys.sorted().joined(separator: ", "))")
        }
        let center = try WormholeWay.center(container: container, transport: transportOption() ?? .sequencedPacket)
        let ready = Arrivals(), pongs = Arrivals()
        let slot = PingLoop.Slot()
        center.addObserver(forName: .init("pong"), object: nil, queue: nil) { _ in
            if slot.current?.next() == true { pongs.add() }
        }
        center.addObserver(forName: .init("ready"), object: nil, queue: nil) { _ in ready.add() }
        guard ready.wait(until: 1, seconds: 300) != nil else { throw BenchError("the peer did not start") }
        // One round first, so that both sides have connected before the rounds counted.
        for (index, count) in [1, rounds].enumerated() {
            let loop = PingLoop(rounds: count, center: center, payload: payload)
            slot.current = loop
            loop.next()
            guard pongs.wait(until: index + 1, seconds: 600) != nil else { throw BenchError("the ping-pong stalled") }
        }
        print("\(rounds) rounds of \(payload.label)")
        exit(0)
    }
}
