import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Fuzz corpus replay", .throttled)
struct FuzzReplayTests {
    private let userClasses = AllowedClasses(FuzzNode.allowedClasses)

    /// What the fuzz target does with one input: the first byte picks the reader. Returns whether it was refused.
    private func read(_ bytes: [UInt8]) -> Bool {
        guard let selector = bytes.first else { return true }
        let body = Array(bytes.dropFirst())
        switch selector % 5 {
        case 0:
            guard let frame = try? Frame(decoding: body) else { return true }
            guard let archive = frame.userInfo else { return false }
            return (try? UserInfoCodec.decode(archive, allowed: .propertyList)) == nil
        case 1:
            let (frames, damaged) = SpoolRecord.decodeAll(body)
            let bad = frames.filter { (try? Frame(decoding: $0)) == nil }.count
            return damaged + bad > 0
        case 2:
            return (try? RegistryFormat.decodeEntry(body)) == nil
        case 3:
            let refused = (try? UserInfoCodec.decode(body, allowed: .propertyList)) == nil
            #if canImport(Glibc)
            // As the receiver of a shared frame reads it, mapped from a memory file: refused exactly as the array.
            if CompactArchive.isCompact(body), !body.isEmpty, let file = try? LinuxCalls.makeMemoryFile("replay"),
                (try? body.withRawBytes { (raw) throws(WormholeError) in try file.descriptor.writeAll(raw, at: 0) }) != nil,
                let mapping = try? FileMapping(file.descriptor, count: body.count)
            {
                let mapped = ArchiveBytes(mapping, offset: 0, count: body.count)
                #expect(((try? UserInfoCodec.decode(mapped, allowed: .propertyList)) == nil) == refused)
            }
            #endif
            return refused
        default:
            guard let value = try? UserInfoCodec.decode(body, allowed: userClasses) else { return true }
            // Whatever decodes can be sent on and read again.
            guard let again = try? UserInfoCodec.encode(value, maximumSize: 1 << 24) else { return true }
            return (try? UserInfoCodec.decode(again, allowed: userClasses)) == nil
        }
    }

    /// The seeds, or with `folder` the files of that folder of the corpus (what the fuzzer found).
    private func corpus(in folder: String? = nil) throws -> [[UInt8]] {
        var url = try #require(Bundle.module.url(forResource: "Corpus", withExtension: nil))
        if let folder { url.appendPathComponent(folder) }
        let files = try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: [.isDirectoryKey])
        return try files.filter { (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) != true }
            .sorted { $0.path < $1.path }.map { try [UInt8](Data(contentsOf: $0)) }
    }

    @Test("every seed of the fuzz corpus reads cleanly")
    func seeds() throws {
        let seeds = try corpus()
        #expect(seeds.count >= 20)
        for seed in seeds { #expect(read(seed) == false) }
        let users = seeds.filter { $0.first.map { $0 % 5 == 4 } == true }
        #expect(users.count >= 6, "seeds holding classes of the user's own")
        for seed in users {
            let value = try UserInfoCodec.decode(Array(seed.dropFirst()), allowed: userClasses)
            #expect(value["node"] is FuzzNode && (value["list"] as? [FuzzNode])?.count == 1)
        }
    }

    @Test("every file the fuzzer found is refused or read, never a crash")
    func findings() throws {
        let findings = try corpus(in: "Findings")
        #expect(findings.count >= 20)
        for bytes in findings { _ = read(bytes) }
    }

    @Test("a few thousand structural mutations of archives are refused or read, never a crash")
    func structuralMutations() throws {
        var generator = SeededGenerator(seed: 2027)
        let archives = try corpus().filter { $0.first.map { [3, 4].contains($0 % 5) } == true }
        var refused = 0, read = 0
        for round in 0..<3_000 {
            let seed = archives[round % archives.count]
            guard var mutator = ArchiveMutator(Array(seed.dropFirst())) else { continue }
            mutator.mutate(using: &generator)
            if self.read([seed[0]] + mutator.bytes) { refused += 1 } else { read += 1 }
        }
        #expect(refused > 300 && read > 300, "refused \(refused), read \(read)")
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
