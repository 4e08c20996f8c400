// The userInfo codec, one call per iteration: encode alone and decode alone, for each payload the other
// benchmark posts, and Foundation's archiver on the 3-key dictionary for comparison.
//
//     swift package benchmark --target Codec
import Benchmark
import Foundation
@_spi(Benchmarking) import Wormhole

/// The classes an observer of these payloads allows; Foundation's unarchiver traps on any other.
let allowedClasses: [AnyClass] = [NSDictionary.self, NSString.self, NSNumber.self, NSData.self]

let benchmarks: @Sendable () -> Void = {
    // Instructions where perf events are allowed (the tool leaves the row out elsewhere); no CPU time, which
    // the kernel counts in ticks far longer than one call. Each benchmark stops after a second.
    Benchmark.defaultConfiguration = .init(
        metrics: [.instructions, .wallClock, .mallocCountTotal, .memoryLeakedBytes],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        maxDuration: .seconds(1),
        maxIterations: 100_000
    )

    // Safe because: each payload is built here and only read.
    nonisolated(unsafe) let payloads: [(label: String, userInfo: [AnyHashable: Any])] = [
        ("n=1", ["n": 1]),
        ("3-key nested", ["key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1]]),
        ("64 KiB Data", ["data": Data(count: 64 * 1024)]),
        ("1 MiB Data", ["data": Data(count: 1024 * 1024)]),
    ]
    for (label, userInfo) in payloads {
        Benchmark("encode \(label)") { _ in
            blackHole(try UserInfoArchive.encode(userInfo))
        }
        let bytes = try! UserInfoArchive.encode(userInfo)
        Benchmark("decode \(label)") { _ in
            blackHole(try UserInfoArchive.decode(bytes, allowedClasses: allowedClasses))
        }
    }

    // Foundation's archiver, for comparison, on the 3-key dictionary.
    nonisolated(unsafe) let nested = NSDictionary(dictionary: payloads[1].userInfo)
    Benchmark("NSKeyedArchiver 3-key nested") { _ in
        blackHole(try NSKeyedArchiver.archivedData(withRootObject: nested, requiringSecureCoding: true))
    }
    let archive = try! NSKeyedArchiver.archivedData(withRootObject: nested, requiringSecureCoding: true)
    Benchmark("NSKeyedUnarchiver 3-key nested") { _ in
        blackHole(try NSKeyedUnarchiver.unarchivedObject(ofClasses: allowedClasses, from: archive))
    }
}
