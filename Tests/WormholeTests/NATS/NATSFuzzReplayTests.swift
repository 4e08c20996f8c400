import Foundation
import Testing
@testable import WormholeBridge
import WormholeTestSupport

/// The seeds of the NATS fuzz target (Benchmarks/Fuzz/FuzzNATS.swift): what nats-server 2.9.10 sent, captured.
@Suite("NATS: fuzz corpus replay", .throttled)
struct NATSFuzzReplayTests {
    /// Every file of CorpusNATS, by name.
    private func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let url = try #require(Bundle.module.url(forResource: "CorpusNATS", withExtension: nil))
        let files = try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
        return try files.sorted { $0.path < $1.path }.map { ($0.lastPathComponent, try [UInt8](Data(contentsOf: $0))) }
    }

    @Test("every seed, real server output, reads without error, the same whole and cut at any byte")
    func seedsRead() throws {
        let seeds = try seeds()
        #expect(seeds.count >= 10)
        var kinds = Set<String>()
        for (name, bytes) in seeds {
            let whole = NATSTestFeed.parse(bytes)
            #expect(whole.error == nil && !whole.ops.isEmpty, "\(name): \(whole)")
            for cut in 0...bytes.count { #expect(NATSTestFeed.parse(bytes, cutAt: cut) == whole, "\(name) at \(cut)") }
            for op in whole.ops {
                switch op {
                case .info(let info): kinds.insert("info \(info.version)")
                case .message(let message): kinds.insert(message.headers?.status.map { "status \($0)" } ?? "message")
                default: kinds.insert("\(op)")
                }
            }
        }
        #expect(kinds.isSuperset(of: ["info 2.9.10", "message", "status 503", "status 408", "status 404", "ping",
                                      "pong", "ok"]), "\(kinds)")
        #expect(kinds.contains { $0.hasPrefix("error") })
    }

    @Test("a few thousand mutations of the seeds are refused or read the same however they arrive")
    func mutations() throws {
        var generator = SeededGenerator(seed: 4_222)
        let seeds = try seeds().map(\.bytes)
        var refused = 0
        for round in 0..<3_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...8, using: &generator)))
                default: bytes.insert([0x20, 0x09, 0x0D, 0x0A, 0x31].randomElement(using: &generator) ?? 0, at: index)
                }
                if bytes.isEmpty { bytes = seeds[0] }
            }
            let whole = NATSTestFeed.parse(bytes, maximumControlLine: 256, maximumPayload: 4096)
            if whole.error != nil { refused += 1 }
            let cut = Int.random(in: 0...bytes.count, using: &generator)
            #expect(NATSTestFeed.parse(bytes, cutAt: cut, maximumControlLine: 256, maximumPayload: 4096) == whole)
            _ = try? NATSHeaders(parsing: bytes[...])
        }
        #expect(refused > 300)
    }
}
