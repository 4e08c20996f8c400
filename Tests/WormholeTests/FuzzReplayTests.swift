import Foundation
import Testing
@testable import Wormhole
import WormholeTestSupport

@Suite("Fuzz corpus replay")
struct FuzzReplayTests {
    /// What the fuzz target does with one input: the first byte picks the reader. Returns whether it was refused.
    private func read(_ bytes: [UInt8]) -> Bool {
        guard let selector = bytes.first else { return true }
        let body = Array(bytes.dropFirst())
        switch selector % 4 {
        case 0:
            guard let frame = try? Frame(decoding: body) else { return true }
            guard let archive = frame.userInfo else { return false }
            return (try? KeyedArchiveDecoder.decodeUserInfo(archive, allowed: .propertyList)) == nil
        case 1:
            let (frames, damaged) = SpoolRecord.decodeAll(body)
            let bad = frames.filter { (try? Frame(decoding: $0)) == nil }.count
            return damaged + bad > 0
        case 2:
            return (try? RegistryFormat.decode(body)) == nil
        default:
            return (try? KeyedArchiveDecoder.decodeUserInfo(body, allowed: .propertyList)) == nil
        }
    }

    private func corpus() throws -> [[UInt8]] {
        let folder = try #require(Bundle.module.url(forResource: "Corpus", withExtension: nil))
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        return try files.sorted { $0.path < $1.path }.map { try [UInt8](Data(contentsOf: $0)) }
    }

    @Test("every seed of the fuzz corpus reads cleanly")
    func seeds() throws {
        let seeds = try corpus()
        #expect(seeds.count >= 20)
        for seed in seeds { #expect(read(seed) == false) }
    }

    @Test("a few thousand mutations of the corpus are refused or read, never a crash")
    func mutations() throws {
        var generator = SeededGenerator(seed: 2026)
        var refused = 0
        let seeds = try corpus()
        for round in 0..<5_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let index = Int.random(in: 1..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...16, using: &generator)))
                default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
                }
                if bytes.count < 2 { bytes = seeds[0] }
            }
            if read(bytes) { refused += 1 }
        }
        #expect(refused > 1_000)
    }
}
