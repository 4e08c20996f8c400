import Foundation
import Synchronization
import Testing
import Wormhole
import WormholeTestSupport

@Suite("Payloads and allowed classes", .throttled)
struct PayloadTests {
    @Test("an 8 MiB userInfo arrives intact in another process")
    func eightMebibytes() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "big", "--count", "1"])
        try await listener.awaitLines(1)
        let size = 8 << 20
        let blob = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) })
        let center = try GroupNotificationCenter(containerURL: container.url)
        let report = try center.postReporting(name: .init("big"), object: nil, userInfo: ["i": 5, "blob": blob])
        #expect(report.delivered + report.spooled == 1)
        #expect(try await listener.awaitExit(timeout: 60) == 0)
        let line = try #require(listener.jsonLines().last)
        #expect(line["blobBytes"] as? Int == size)
        #expect(line["blobSum"] as? Int == blob.reduce(0) { $0 &+ Int($1) })
    }

    @Test("a userInfo above the maximum is refused whole, with a clear error")
    func tooLarge() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("huge"), object: nil, queue: nil, using: recorder.block)
        let blob = Data(count: GroupNotificationCenter.maximumPayloadSize + 1)
        #expect {
            try center.postReporting(name: .init("huge"), object: nil, userInfo: ["blob": blob])
        } throws: { ($0 as? WormholeError)?.code == .payloadTooLarge }
        try center.postReporting(name: .init("huge"), object: nil, userInfo: ["i": 1])
        #expect(try await recorder.wait(for: 1).first?.number == 1, "nothing of the refused post was sent")
    }

    @Test("a value that cannot be securely archived is refused with the key that holds it")
    func unsupportedValue() throws {
        struct NotCodable {}
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect {
            try center.postReporting(name: .init("bad"), object: nil, userInfo: ["ok": 1, "list": [1, NotCodable()]])
        } throws: { error in
            let error = error as? WormholeError
            return error?.code == .unsupportedValue && error?.detail.contains("list") == true
        }
    }

    @Test("an empty name is refused")
    func emptyName() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect { try center.postReporting(name: .init(""), object: nil) } throws: {
            ($0 as? WormholeError)?.code == .invalidNotification
        }
    }

    @Test("post(_:) with an object that is not a String is logged and not posted")
    func nonStringObject() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("obj"), object: nil, queue: nil, using: recorder.block)
        center.post(Notification(name: .init("obj"), object: NSNumber(value: 3), userInfo: ["i": 0]))
        center.post(Notification(name: .init("obj"), object: "fine", userInfo: ["i": 1]))
        let received = try await recorder.wait(for: 1)
        #expect(received.first?.number == 1)
        #expect(center.statistics.posted == 1)
    }

    @Test("a class outside allowedClasses reaches the observer with userInfo nil; allowing it delivers it")
    func customClass() async throws {
        let container = TemporaryContainer()
        let strict = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "pt", "--count", "1"])
        let open = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "pt", "--count", "1", "--allow-custom"])
        try await strict.awaitLines(1)
        try await open.awaitLines(1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "pt", "--start", "4", "--custom"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await strict.awaitExit() == 0)
        #expect(try await open.awaitExit() == 0)
        #expect(strict.jsonLines().last?["userInfo"] is NSNull)
        #expect(open.jsonLines().last?["point"] as? String == "4,-4")
    }

    @Test("a class of the poster's own sent to an observer that does not allow it: userInfo nil, the receiver lives on")
    func disallowedClass() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "d", "--count", "2"])
        try await listener.awaitLines(1)
        let dated = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--custom"])
        #expect(try await dated.awaitExit() == 0)
        let plain = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--start", "9"])
        #expect(try await plain.awaitExit() == 0)
        #expect(try await listener.awaitExit() == 0)
        let lines = listener.jsonLines().filter { $0["name"] != nil }
        #expect(lines.count == 2)
        #expect(lines.first?["userInfo"] is NSNull)
        #expect(lines.last?["i"] as? Int == 9)
        #expect(listener.errorOutput.contains { $0.contains("TestPoint") })
    }

    @Test("allowedClasses adds to the value classes: a class of the user's own inside a dictionary arrives with only that class listed")
    func allowedClassesAdd() async throws {
        let container = TemporaryContainer()
        let open = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "pt", "--count", "1", "--allow-custom"])
        try await open.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let report = try center.postReporting(
            name: .init("pt"), object: nil, userInfo: ["i": 3, "point": TestPoint(x: 3, y: -3), "when": Date(timeIntervalSince1970: 1)])
        #expect(report.delivered == 1)
        #expect(try await open.awaitExit() == 0)
        let line = try #require(open.jsonLines().last)
        #expect(line["point"] as? String == "3,-3")
        #expect((line["keys"] as? [String]) == ["i", "point", "when"])
    }

    @Test("NSNull, a URL, a UUID and a set reach an observer that names no classes, and `wormhole listen`")
    func everyValueKind() async throws {
        let container = TemporaryContainer()
        let plain = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "v", "--count", "1"])
        try await plain.awaitLines(1)
        let tool = try Peer("wormhole", ["listen", "--container", container.path, "--name", "v", "--count", "1"])
        try await tool.awaitError(containing: "listening")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let uuid = UUID()
        let report = try center.postReporting(name: .init("v"), object: nil, userInfo: [
            "null": NSNull(), "url": URL(string: "https://example.com/a?b=1")!, "uuid": uuid, "set": Set([3, 1, 2]),
        ])
        #expect(report.delivered == 2 && report.failures.isEmpty)
        #expect(try await plain.awaitExit() == 0)
        let line = try #require(plain.jsonLines().last)
        #expect(line["null"] as? Bool == true)
        #expect(line["url"] as? String == "https://example.com/a?b=1")
        #expect(line["uuid"] as? String == uuid.uuidString)
        #expect(line["set"] as? [Int] == [1, 2, 3])
        #expect(try await tool.awaitExit() == 0)
        let printed = try #require(tool.jsonLines().last?["userInfo"] as? [String: Any])
        #expect(printed["null"] is NSNull)
        #expect(printed["url"] as? String == "https://example.com/a?b=1")
        #expect(printed["uuid"] as? String == uuid.uuidString)
        #expect((printed["set"] as? [Int])?.sorted() == [1, 2, 3])
        #expect(center.statistics.userInfoRejected == 0)
    }

    @Test("in one process, each observer decodes with its own allowed classes")
    func perObserverClasses() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let everything = Recorder(), noPoints = Recorder()
        center.addObserver(forName: .init("mixed"), object: nil, allowedClasses: [TestPoint.self], queue: nil, using: everything.block)
        center.addObserver(forName: .init("mixed"), object: nil, queue: nil, using: noPoints.block)
        center.post(name: .init("mixed"), object: nil, userInfo: ["i": 1, "point": TestPoint(x: 2, y: 3)])
        #expect((try await everything.wait(for: 1).first?.userInfo?["point"] as? TestPoint)?.y == 3)
        #expect(try await noPoints.wait(for: 1).first?.userInfo == nil)
        #expect(center.statistics.userInfoRejected == 1)
    }

    @Test("a run of posts with one userInfo, received in one batch: each delivery gets it whole, each refusal counts")
    func repeatedUserInfo() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let everything = Recorder(), noPoints = Recorder()
        // The first delivery holds the receive thread until the poster is done: the rest wait in the socket,
        // and are read together.
        let posted = DispatchSemaphore(value: 0)
        let held = Atomic<Bool>(false)
        center.addObserver(forName: .init("same"), object: nil, allowedClasses: [TestPoint.self], queue: nil) { note in
            if !held.exchange(true, ordering: .relaxed) { _ = posted.wait(timeout: .now() + 60) }
            everything.block(note)
        }
        center.addObserver(forName: .init("same"), object: nil, queue: nil, using: noPoints.block)
        let poster = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", "same", "--count", "40", "--same", "--custom"])
        #expect(try await poster.awaitExit() == 0)
        posted.signal()
        let dated = try await everything.wait(for: 40)
        #expect(dated.allSatisfy { ($0.userInfo?["point"] as? TestPoint)?.x == 0 })
        #expect(Set(dated.compactMap { $0.userInfo?["pid"] as? Int }).count == 1)
        #expect(try await noPoints.wait(for: 40).allSatisfy { $0.userInfo == nil })
        #expect(center.statistics.userInfoRejected == 40)
    }
}
