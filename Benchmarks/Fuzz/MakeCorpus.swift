// Writes the seed corpus of the fuzz target into the folder given: valid frames, spool records, registries,
// compact archives (what a post of values sends) and keyed archives (Wormhole's and Foundation's), each
// prefixed by the byte that selects its reader. Built by swiftc against the engine's module, in a module named
// as the tests are so that FuzzNode's class name is theirs:
//     m=/tmp/corpus-modules; mkdir -p $m
//     swiftc -c -wmo -parse-as-library -package-name wormhole -enable-testing -module-name WormholeEngine \
//         -emit-module-path $m/WormholeEngine.swiftmodule $(find Sources/WormholeEngine -name '*.swift') -o $m/engine.o
//     swiftc -parse-as-library -package-name wormhole -I $m -module-name WormholeTests $m/engine.o \
//         Tests/WormholeTests/Support/FuzzNode.swift Benchmarks/Fuzz/MakeCorpus.swift -o /tmp/make-corpus \
//         && /tmp/make-corpus Tests/WormholeTests/Corpus
import Foundation
@testable import WormholeEngine

@main
struct MakeCorpus {
    static func main() throws {
        let folder = CommandLine.arguments.dropFirst().first ?? "."
        let values: [[AnyHashable: Any]] = [
            ["n": 1],
            ["key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1]],
            ["ids": [1, 2, 3], "flag": true, "when": Date(timeIntervalSinceReferenceDate: 0), "data": Data([1, 2, 3])],
            ["title": "héllo ✓", "null": "$null", "real": 2.5, "big": UInt64.max, "negative": -7],
            ["nested": [["a": [1, [2, [3]]]], ["b": ["c": "d"]]]],
        ]
        var index = 0
        func write(_ selector: UInt8, _ bytes: [UInt8]) throws {
            try Data([selector] + bytes).write(to: URL(fileURLWithPath: "\(folder)/seed-\(index)"))
            index += 1
        }
        for value in values {
            let archive = try UserInfoCodec.encode(value, maximumSize: 1 << 20)
            let frame = Frame(poster: 7, sequence: UInt64(index), name: "seed", object: "corpus", userInfo: archive).encoded()
            try write(0, frame)
            try write(1, SpoolRecord.segment([frame, frame]))
            try write(3, archive)
            try write(3, KeyedArchiveEncoder.encode(value, path: "userInfo", maximumSize: 1 << 20))
            let foundation = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: value), requiringSecureCoding: true)
            try write(3, [UInt8](foundation))
        }
        let entries = [
            RegistryEntry(listener: 1, pid: 10, subscriptions: [Subscription(name: "a", object: nil), Subscription(name: nil, object: "o")]),
            RegistryEntry(listener: 2, pid: 0, subscriptions: [], identity: "widget", lastSeen: 1_000),
            RegistryEntry(listener: 3, pid: 11, subscriptions: [Subscription(name: "d", object: nil)], transport: .datagram),
        ]
        for entry in entries { try write(2, RegistryFormat.encode(entry)) }
        // Classes of the user's own, read by Wormhole's coder (selector 4): from Wormhole's encoder and Foundation's.
        index = max(index, 100)
        for seed in 0..<3 {
            let value: [AnyHashable: Any] = ["node": FuzzNode.sample(seed), "list": [FuzzNode.sample(seed + 10)], "n": seed]
            try write(4, UserInfoCodec.encode(value, maximumSize: 1 << 20))
            let foundation = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: value), requiringSecureCoding: true)
            try write(4, [UInt8](foundation))
        }
    }
}
