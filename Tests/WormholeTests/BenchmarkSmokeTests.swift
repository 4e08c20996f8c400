import Foundation
import Testing

@Suite("The benchmark", .throttled)
struct BenchmarkSmokeTests {
    @Test("a quick run completes and measures every mechanism with every payload")
    func quickRun() async throws {
        let container = TemporaryContainer("bench")
        let output = container.path + "/results.json"
        let bench = try Peer("wormhole-bench", ["--quick", "--json", output])
        #expect(try await bench.awaitExit(timeout: 900) == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let rows = try #require(document["rows"] as? [[String: Any]])
        let payloads = ["no userInfo", "[\"n\": 1]", "3-key nested", "64 KiB Data", "1 MiB Data"]
        var mechanisms = ["raw AF_UNIX seqpacket", "Wormhole", "MMWormhole's way (file + rename + inotify)"]
        if document["dbus"] == nil { mechanisms.append("D-Bus signal (dbus-daemon)") }
        for mechanism in mechanisms {
            for payload in payloads {
                let row = rows.first { $0["mechanism"] as? String == mechanism && $0["payload"] as? String == payload }
                #expect(row?["p50_us"] is Double, "\(mechanism), \(payload): no latency")
                #expect(row?["stamped_p50_us"] is Double, "\(mechanism), \(payload): no stamped latency")
                #expect(row?["throughput_per_s"] is Double, "\(mechanism), \(payload): no throughput")
                #expect(row?["fan_out_8_per_s"] is Double, "\(mechanism), \(payload): no fan-out")
            }
        }
        #expect((document["registry_growth"] as? [[String: Any]])?.count == 3)
        #expect(document["stopped_receiver"] is [String: Any])
        // The raw socket, blocking and polled, and four kinds of observer, each after its matched raw row.
        let kinds = document["observer_kinds"] as? [[String: Any]]
        #expect(kinds?.count == 10)
        #expect(kinds?.filter { ($0["kind"] as? String)?.hasPrefix("raw polled, to ") == true }.count == 4)
    }

    @Test(
        "a tiny bridge run measures the bridge between two hosts and both floors",
        .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (the bridge rows start their own)"))
    func bridgeRun() async throws {
        let container = TemporaryContainer("bench-bridge")
        let output = container.path + "/bridge.json"
        let bench = try Peer("wormhole-bench", ["--bridge", "--rounds", "20", "--burst", "50", "--passes", "1", "--json", output])
        #expect(try await bench.awaitExit(timeout: 300) == 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["mode"] as? String == "bridge")
        let rows = try #require(document["rows"] as? [[String: Any]])
        try #require(rows.compactMap { $0["row"] as? String } == ["nats-core", "jetstream", "wormhole-bridge"])
        for row in rows {
            let name = row["row"] as? String ?? "?"
            #expect(row["round_trips"] as? Int == 20, "\(name): not every round trip came back")
            for key in ["round_trip_p50_us", "round_trip_p90_us", "round_trip_p99_us", "throughput_per_s"] {
                #expect(row[key] is Double, "\(name): no \(key)")
            }
        }
        // Each row against the floors above it.
        #expect(rows[2]["round_trip_p50_ratio_to_jetstream"] is Double)
        #expect(rows[2]["throughput_ratio_to_nats_core"] is Double)
        #expect(rows[1]["round_trip_p50_ratio_to_nats_core"] is Double)
        #expect(rows[1]["round_trip_p50_ratio_to_jetstream"] == nil)
    }
}
