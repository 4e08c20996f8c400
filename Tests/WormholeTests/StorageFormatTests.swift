import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

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

    @Test("a frame written into memory of its own is its array encoding byte for byte, head and userInfo parts too")
    func frameWrittenInPlace() throws {
        let archive: [UInt8] = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let frames = [
            Frame(poster: 1, sequence: 2, name: "n", object: nil, userInfo: nil),
            Frame(poster: .max, sequence: .max, name: "héllo ✓", object: "objet ✓", userInfo: archive),
            Frame(poster: 5, sequence: 6, name: String(repeating: "x", count: 1_000), object: "", userInfo: [1]),
            Frame.nudge(from: 9),
        ]
        for frame in frames {
            let encoded = frame.encoded()
            #expect(encoded.count == frame.encodedSize)
            let outgoing = OutgoingFrame(frame)
            #expect(outgoing.withBytes { [UInt8]($0) } == encoded)
            // Made once: a second use sees the same bytes, and the parts are then the whole frame.
            #expect(outgoing.bytes == encoded)
            var parts: [UInt8] = []
            try outgoing.withParts { head, archive in parts = [UInt8](head) + [UInt8](archive) }
            #expect(parts == encoded)
            // Before the whole frame is made, the parts are its head and its userInfo.
            var split: [UInt8] = []
            try OutgoingFrame(frame).withParts { head, archive in
                #expect([UInt8](head) == frame.encodedHead())
                split = [UInt8](head) + [UInt8](archive)
            }
            #expect(split == encoded)
            let decoded = try Frame(decoding: encoded)
            #expect(decoded.kind == frame.kind && decoded.poster == frame.poster && decoded.sequence == frame.sequence)
            #expect(decoded.name == frame.name && decoded.object == frame.object)
            #expect(decoded.userInfo?.array == frame.userInfo?.array)
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
