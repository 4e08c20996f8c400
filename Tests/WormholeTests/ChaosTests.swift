import Foundation
import Testing

@Suite("Chaos: stops, kills and observer churn while posting", .throttled)
struct ChaosTests {
    /// The numbers in the summary line, by name ("lost", "duplicated", …).
    private func counts(_ line: String) -> [String: Int] {
        var result: [String: Int] = [:]
        for part in line.dropFirst("chaos: ".count).split(separator: ",") {
            let words = part.split(separator: " ", maxSplits: 1)
            if words.count == 2, let value = Int(words[0]) { result[String(words[1])] = value }
        }
        return result
    }

    @Test("a short fixed-seed run loses, duplicates, reorders and corrupts nothing, and nothing crashes")
    func shortRun() async throws {
        let chaos = try Peer("wormhole-chaos", [
            "--posters", "3", "--receivers", "3", "--notifications", "30000", "--seconds", "12", "--seed", "42",
        ])
        let status = try await chaos.awaitExit(timeout: 240)
        let summary = try #require(chaos.output.last { $0.hasPrefix("chaos: 3 posters") })
        let values = counts(summary)
        #expect(values["posted"] ?? 0 >= 30000)
        for name in ["lost", "duplicated", "out of order", "corrupt", "crashes"] {
            #expect(values[name] == 0, "\(name) in \(summary)")
        }
        #expect(status == 0)
        #expect(chaos.output.contains { $0.contains("receiver stops") && !$0.contains(" 0 receiver stops") })
    }

    @Test("the harness notices what receivers do not report")
    func harnessCounts() async throws {
        let chaos = try Peer("wormhole-chaos", [
            "--posters", "1", "--receivers", "2", "--notifications", "3000", "--seconds", "3", "--seed", "1", "--forget-every", "100",
        ])
        #expect(try await chaos.awaitExit(timeout: 120) == 1)
        let summary = try #require(chaos.output.last { $0.hasPrefix("chaos: 1 posters") })
        #expect(counts(summary)["lost"] ?? 0 > 0)
    }
}
