import Foundation
@_spi(Benchmarking) import Wormhole

/// One payload every mechanism carries.
struct Payload: @unchecked Sendable {  // Unchecked because: the userInfo is built once and only read.
    let label: String
    /// What Wormhole and Foundation post; MMWormhole's way archives it with NSKeyedArchiver.
    let userInfo: [AnyHashable: Any]?
    /// By how much to divide sample counts for this payload (large ones are slow to archive).
    let divisor: Int
    /// What the raw socket and D-Bus carry: the archive Wormhole sends, plus 32 bytes for a frame's header
    /// and name, so every mechanism moves the same number of bytes.
    let bytes: [UInt8]

    init(_ label: String, _ userInfo: [AnyHashable: Any]?, divisor: Int) {
        self.label = label
        self.userInfo = userInfo
        self.divisor = divisor
        let archive = userInfo.flatMap { try? UserInfoArchive.encode($0) } ?? []
        bytes = [UInt8](repeating: 0x57, count: 32) + archive
    }

    // Safe because: built once, only read.
    nonisolated(unsafe) static let nested: [AnyHashable: Any] = [
        "key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1],
    ]

    static let all: [Payload] = [
        Payload("no userInfo", nil, divisor: 1),
        Payload("[\"n\": 1]", ["n": 1], divisor: 1),
        Payload("3-key nested", nested, divisor: 1),
        Payload("64 KiB Data", ["data": Data(count: 64 * 1024)], divisor: 10),
        Payload("1 MiB Data", ["data": Data(count: 1024 * 1024)], divisor: 100),
    ]
}

/// How many samples each measurement takes, before dividing by the payload's and the mechanism's divisors.
struct Counts {
    var rounds: Int
    var flood: Int
    var fanOut: Int

    static let full = Counts(rounds: 10_000, flood: 20_000, fanOut: 20_000)
    static let quick = Counts(rounds: 200, flood: 1_000, fanOut: 400)

    /// The counts for one payload on a mechanism `slowness` times slower than a socket; at least 5 each.
    func scaled(_ payload: Payload, slowness: Int = 1) -> Counts {
        let divisor = payload.divisor * slowness
        return Counts(rounds: max(5, rounds / divisor), flood: max(5, flood / divisor), fanOut: max(5, fanOut / divisor))
    }
}
