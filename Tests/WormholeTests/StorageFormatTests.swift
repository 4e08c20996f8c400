import Foundation
import Testing
@testable import Wormhole

@Suite("Storage formats: registry entries and spool segments", .throttled)
struct StorageFormatTests {
    private let samples = [
        RegistryEntry(listener: 1, pid: 10, subscriptions: []),
        RegistryEntry(listener: 2, pid: 0, subscriptions: [Subscription(name: "héllo ✓", object: nil), Subscription(name: nil, object: "o")],
                      identity: "widget", lastSeen: 1_000),
        RegistryEntry(listener: .max, pid: -1, subscriptions: (0..<100).map { Subscription(name: "n\($0)", object: String(repeating: "x", count: $0)) }),
    ]

    @Test("an entry reads back as written, and its size is known without encoding it")
    func entryRoundTrip() throws {
        for entry in samples {
            let bytes = RegistryFormat.encode(entry)
            #expect(RegistryFormat.encodedSize(of: entry) == bytes.count)
            #expect(try RegistryFormat.decodeEntry(bytes) == entry)
            #expect((try? RegistryFormat.decodeEntry(Array(bytes.dropLast()))) == nil)
        }
    }

    @Test("a segment reads back whole; cut anywhere, it yields only the records before the cut")
    func segmentRoundTrip() throws {
        let frames = (0..<5).map { Frame(poster: 3, sequence: UInt64($0), name: "s", object: nil, userInfo: nil).encoded() }
        let segment = SpoolRecord.segment(frames)
        let whole = SpoolRecord.decodeAll(segment)
        #expect(whole.frames == frames && whole.damaged == 0)
        for cut in stride(from: 1, to: segment.count, by: 7) {
            let read = SpoolRecord.decodeAll(Array(segment.prefix(cut)))
            #expect(frames.starts(with: read.frames))
        }
    }
}
