import Foundation
import Testing
import Wormhole
import WormholeTestSupport

/// The relay under chaos: relays killed at random and restarted, one of them kept down for a while (the other
/// app not running), reachability flapping, posters in several processes on both sides, group values updated on
/// both at once, a retained notification posted on either. Nothing may be lost or doubled, each poster's order
/// holds, and both sides end with the same values.
@Suite("Relay chaos", .serialized, .throttled)
struct RelayChaosTests {
    @Test("Relays killed, the other app away, reachability flapping: 0 lost, 0 doubled, in order, values equal")
    func chaos() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["WORMHOLE_RELAY_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededGenerator(seed: seed)
        let pair = RelayPair(routes: ["notifications:p2w:outgoing", "notifications:w2p:incoming", "value:score", "retained:latest"])
        let routes: [RelayPair.Side: [String]] = [
            .phone: pair.routes,
            .watch: ["notifications:p2w:incoming", "notifications:w2p:outgoing", "value:score", "retained:latest"],
        ]
        let observers: [RelayPair.Side: Peer] = [
            .watch: try await pair.startObserver(.watch, name: "p2w"),
            .phone: try await pair.startObserver(.phone, name: "w2p"),
        ]
        var relays: [RelayPair.Side: Peer] = [:]
        for side in RelayPair.Side.allCases { relays[side] = try await pair.startRelay(side, routes: routes[side]) }
        let centers = try RelayPair.Side.allCases.reduce(into: [RelayPair.Side: GroupNotificationCenter]()) {
            $0[$1] = try GroupNotificationCenter(containerURL: pair.container($1).url)
        }
        let started = ContinuousClock.now
        var expected: [RelayPair.Side: [Int: [Int]]] = [.phone: [:], .watch: [:]]
        var kills = 0, flaps = 0, away = 0
        // WORMHOLE_RELAY_ROUNDS runs a longer chaos.
        let rounds = Int(ProcessInfo.processInfo.environment["WORMHOLE_RELAY_ROUNDS"] ?? "") ?? 10, perPoster = 40
        for round in 0..<rounds {
            // Two posters on each side at once.
            var posters: [(RelayPair.Side, Peer, Int)] = []
            for side in RelayPair.Side.allCases {
                for poster in 0..<2 {
                    let start = (round * 2 + poster) * perPoster
                    let name = side == .phone ? "p2w" : "w2p"
                    posters.append((side, try Peer("wormhole-test-peer", [
                        "post", "--container", pair.container(side).path, "--name", name, "--count", "\(perPoster)",
                        "--start", "\(start)",
                    ]), start))
                }
                let adder = try Peer("wormhole-test-peer", ["value-add", "--container", pair.container(side).path, "--name", "score", "--count", "3"])
                posters.append((side, adder, -1))
            }
            let retainedSide = Bool.random(using: &random) ? RelayPair.Side.phone : .watch
            centers[retainedSide]?.post(name: Notification.Name("latest"), object: nil, userInfo: ["round": round], retain: true)
            // The chaos of this round.
            switch Int.random(in: 0..<4, using: &random) {
            case 0, 1:
                let side = Bool.random(using: &random) ? RelayPair.Side.phone : .watch
                if let relay = relays[side] {
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0..<300, using: &random)))
                    relay.signal(SIGKILL)
                    _ = try await relay.awaitExit()
                    kills += 1
                }
                relays[side] = try await pair.startRelay(side, routes: routes[side])
            case 2:
                // The watch app away for this round.
                if let relay = relays[.watch] {
                    relay.signal(SIGKILL)
                    _ = try await relay.awaitExit()
                    relays[.watch] = nil
                    away += 1
                }
            default:
                pair.setReachable(Bool.random(using: &random))
                flaps += 1
            }
            for (side, poster, start) in posters {
                #expect(try await poster.awaitExit() == 0)
                if start >= 0 { expected[side == .phone ? .watch : .phone]![Int(poster.pid)] = Array(start..<(start + perPoster)) }
            }
            if relays[.watch] == nil, round % 2 == 1 { relays[.watch] = try await pair.startRelay(.watch, routes: routes[.watch]) }
        }
        for side in RelayPair.Side.allCases where relays[side] == nil {
            relays[side] = try await pair.startRelay(side, routes: routes[side])
        }
        pair.setReachable(true)
        for side in RelayPair.Side.allCases {
            let count = rounds * 2 * perPoster
            guard let observer = observers[side] else { continue }
            _ = try? await observer.awaitLines(count + 1, timeout: 60)
            let received = RelayPair.received(by: observer)
            let total = received.values.map(\.count).reduce(0, +)
            // Never doubled, never out of order, never from a poster that did not post.
            for (poster, numbers) in received {
                #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "seed \(seed): poster \(poster) out of order or doubled")
                #expect(Set(numbers).isSubset(of: expected[side]?[poster] ?? []), "seed \(seed): poster \(poster) sent what was not posted")
            }
            #expect(received == expected[side], "seed \(seed): \(side) received \(total) of \(count)")
        }
        let values = try RelayPair.Side.allCases.map { GroupValue("score", default: 0, in: try #require(centers[$0])) }
        try await pollUntil("the score is the same on both sides", timeout: 60) { values[0].value == values[1].value && values[0].value > 0 }
        try await pollUntil("the latest retained is the same on both sides", timeout: 60) {
            let rounds = RelayPair.Side.allCases.map {
                centers[$0]?.retainedNotification(named: Notification.Name("latest"))?.userInfo?["round"] as? Int
            }
            return rounds[0] != nil && rounds[0] == rounds[1]
        }
        if ProcessInfo.processInfo.environment["WORMHOLE_RELAY_DEBUG"] != nil {
            for (side, relay) in relays { print("RELAYLOG \(side): \(relay.errorOutput.suffix(60).joined(separator: "\nRELAYLOG "))\nRELAYSTATUS \(relay.output.suffix(3))") }
        }
        let elapsed = ContinuousClock.now - started
        print("relay chaos: seed \(seed), \(rounds * 2 * 2 * perPoster) notifications in \(elapsed), \(kills) relay kills, \(away) rounds with the watch away, \(flaps) reachability flips; score \(values[0].value)")
        _ = relays
    }
}
