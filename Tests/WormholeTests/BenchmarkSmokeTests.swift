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
}
