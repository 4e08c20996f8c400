// `--bridge`: Wormhole between two hosts through one NATS server, set against what the server itself costs
// through the same client code, measured side by side in one run (BridgeWay, NATSFloor). The benchmark starts
// the server itself (LocalNATSServer) and stops it at the end.
import Foundation
import WormholeBridge

enum BridgeBench {
    /// How much each row measures.
    struct Counts {
        /// Round trips timed, after `warmUp` untimed ones.
        var rounds: Int
        var warmUp: Int
        /// Notifications of the one-way burst through JetStream and through the bridge; NATS core's is ten
        /// times as many, which it carries in about the same time.
        var burst: Int
        /// How many times each row is measured, the rows in turn.
        var passes: Int

        static let full = Counts(rounds: 2_000, warmUp: 200, burst: 5_000, passes: 3)
        static let quick = Counts(rounds: 200, warmUp: 20, burst: 500, passes: 1)
    }

    /// One row of the table.
    struct Result {
        /// The row's key in the JSON report.
        var key: String
        var label: String
        /// What the row measures, printed under the table.
        var meaning: String
        var roundTrips: RoundTrips?
        var burst: Int
        var rate: Double?
    }

    /// The payload of the floors' messages: the size of the bridge's for a notification with no userInfo (the
    /// outbox item, a binary property list of about 128 bytes), with the same two headers (about 80 bytes).
    static let floorPayload = 128

    /// Measures the three rows, prints the table, and writes the JSON report to `jsonPath` when given.
    /// - Throws: ``BenchError`` when nats-server is missing, did not start, or a row could not be measured.
    static func run(folder: String, counts: Counts, jsonPath: String?) throws {
        let server = try LocalNATSServer(folder: folder + "/nats")
        defer { server.stop() }
        let url = "nats://127.0.0.1:\(server.port)"
        print("the bridge between two hosts, through nats-server \(server.version) with JetStream (file store) on 127.0.0.1:\(server.port); "
            + "\(counts.passes) × \(counts.rounds) round trips after \(counts.warmUp), \(counts.passes) bursts of \(counts.burst) "
            + "(NATS core: \(counts.burst * 10)), the rows in turn; the containers and the server's store in \(folder)")
        let floor = try NATSFloor(server: NATSServerAddress(host: "127.0.0.1", port: UInt16(server.port)), payloadSize: floorPayload)
        defer { floor.close() }
        try floor.prepareJetStream()
        let bridges = try BridgeWay(folder: folder + "/bridge", server: url)
        defer { bridges.stop() }

        // Warmed up, then the rows in turn, pass after pass, so that whatever else the machine does falls on
        // each alike; each row's round trips pooled, its throughput the median of its bursts.
        _ = try floor.corePingPong(rounds: counts.warmUp)
        _ = try floor.jetStreamPingPong(rounds: counts.warmUp)
        guard bridges.pingPong(rounds: counts.warmUp) != nil else { throw BenchError("the bridges carried no ping-pong in time") }
        var samples: [[UInt64]] = [[], [], []]
        var rates: [[Double]] = [[], [], []]
        for pass in 1...counts.passes {
            guard let core = try floor.corePingPong(rounds: counts.rounds) else { throw BenchError("NATS core: a pong did not come back in time") }
            let jetStream = try floor.jetStreamPingPong(rounds: counts.rounds)
            guard let bridged = bridges.pingPong(rounds: counts.rounds) else { throw BenchError("the bridges: a pong did not come back in time") }
            let passSamples = [core, jetStream, bridged]
            for row in samples.indices { samples[row] += passSamples[row] }
            guard let coreRate = try floor.coreBurst(count: counts.burst * 10) else { throw BenchError("NATS core: a burst did not arrive in time") }
            rates[0].append(coreRate)
            rates[1].append(try floor.jetStreamBurst(count: counts.burst))
            guard let bridgedRate = bridges.burst(count: counts.burst) else { throw BenchError("the bridges: a burst did not arrive in time") }
            rates[2].append(bridgedRate)
            let p50s = passSamples.map { RoundTrips(nanoseconds: $0).map { String(format: "%.0f", $0.p50) } ?? "–" }
            let passRates = rates.map { $0.last.map { String(format: "%.0f", $0) } ?? "–" }
            print("  pass \(pass) of \(counts.passes): p50 µs \(p50s.joined(separator: " / ")), /s \(passRates.joined(separator: " / "))")
        }
        func median(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.sorted()[values.count / 2] }
        let results = [
            Result(
                key: "nats-core", label: "NATS core publish/subscribe (floor)",
                meaning: "a message published, answered by a subscriber on another connection on another subject; "
                    + "no store, no acknowledgement; the burst counted by the subscriber",
                roundTrips: RoundTrips(nanoseconds: samples[0]), burst: counts.burst * 10, rate: median(rates[0])),
            Result(
                key: "jetstream", label: "JetStream publish + PubAck, pull + ack (floor)",
                meaning: "each way: published into a stream, the server's PubAck awaited; the other side's durable "
                    + "consumer (explicit ack, max_ack_pending 1, as the bridge's) hands it over in answer to a pull, "
                    + "acknowledged; the burst: published one PubAck at a time, pulled and acknowledged one at a time",
                roundTrips: RoundTrips(nanoseconds: samples[1]), burst: counts.burst, rate: median(rates[1])),
            Result(
                key: "wormhole-bridge", label: "Wormhole, host to host through the bridges",
                meaning: "posted in A's group, through A's bridge, the stream and B's bridge (each in a process of its "
                    + "own) to an observer in B, which posts the answer back the same way; each bridge publishes one "
                    + "message at a time (PubAck awaited) and its consumer hands it one at a time, its own messages "
                    + "included; the burst posted in A, counted by an observer in B",
                roundTrips: RoundTrips(nanoseconds: samples[2]), burst: counts.burst, rate: median(rates[2])),
        ]

        print("")
        print(table(results))
        for result in results { print("\(result.label): \(result.meaning).") }
        print("× core, × JetStream: the row's p50 against that floor's; /s: against that floor's throughput. "
            + "Every process on this machine; a round trip crosses the server twice.")

        if let jsonPath {
            let document: [String: Any] = [
                "mode": "bridge", "nats_server": server.version, "rounds": counts.rounds, "warm_up": counts.warmUp, "passes": counts.passes,
                "floor_payload_bytes": floorPayload, "rows": results.map { json($0, in: results) },
            ]
            let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: jsonPath))
            print("wrote \(jsonPath)")
        }
    }

    // MARK: The report

    private static func ratio(_ value: Double?, _ floor: Double?) -> Double? {
        guard let value, let floor, floor > 0 else { return nil }
        return value / floor
    }

    private static func floorRow(_ key: String, _ results: [Result]) -> Result? { results.first { $0.key == key } }

    private static func table(_ results: [Result]) -> String {
        let header = [
            "row", "round trips", "p50 µs", "p90 µs", "p99 µs", "p50 × core", "p50 × JetStream", "burst", "/s",
            "/s % core", "/s % JetStream",
        ]
        func number(_ value: Double?, _ format: String) -> String { value.map { String(format: format, $0) } ?? "–" }
        let core = floorRow("nats-core", results), jetStream = floorRow("jetstream", results)
        let lines = [header] + results.map { row -> [String] in
            let isCore = row.key == "nats-core", isJetStream = row.key == "jetstream"
            return [
                row.label, row.roundTrips.map { "\($0.count)" } ?? "–", number(row.roundTrips?.p50, "%.1f"),
                number(row.roundTrips?.p90, "%.1f"), number(row.roundTrips?.p99, "%.1f"),
                isCore ? "" : number(ratio(row.roundTrips?.p50, core?.roundTrips?.p50), "%.1f×"),
                isCore || isJetStream ? "" : number(ratio(row.roundTrips?.p50, jetStream?.roundTrips?.p50), "%.2f×"),
                "\(row.burst)", number(row.rate, "%.0f"),
                isCore ? "" : number(ratio(row.rate, core?.rate).map { $0 * 100 }, "%.1f %%"),
                isCore || isJetStream ? "" : number(ratio(row.rate, jetStream?.rate).map { $0 * 100 }, "%.0f %%"),
            ]
        }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        return lines.map { cells in
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    private static func json(_ row: Result, in results: [Result]) -> [String: Any] {
        var entry: [String: Any] = ["row": row.key, "label": row.label, "meaning": row.meaning, "burst": row.burst]
        entry["round_trips"] = row.roundTrips?.count
        entry["round_trip_p50_us"] = row.roundTrips?.p50
        entry["round_trip_p90_us"] = row.roundTrips?.p90
        entry["round_trip_p99_us"] = row.roundTrips?.p99
        entry["throughput_per_s"] = row.rate
        // Against the floors above the row.
        for floor in ["nats-core", "jetstream"].prefix(while: { $0 != row.key }) {
            guard let floorResult = floorRow(floor, results) else { continue }
            let name = floor == "nats-core" ? "nats_core" : "jetstream"
            entry["round_trip_p50_ratio_to_\(name)"] = ratio(row.roundTrips?.p50, floorResult.roundTrips?.p50)
            entry["throughput_ratio_to_\(name)"] = ratio(row.rate, floorResult.rate)
        }
        return entry
    }
}
