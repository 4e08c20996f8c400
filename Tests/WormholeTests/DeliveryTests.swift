import Foundation
import Testing
import Wormhole

@Suite("Delivery across processes", .throttled)
struct DeliveryTests {
    @Test("userInfo from another process bridges to Swift types")
    func payloadBridges() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("typed"), object: nil, queue: nil, using: recorder.block)

        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "typed", "--object", "tag", "--types"])
        #expect(try await poster.awaitExit() == 0)
        let note = try #require(try await recorder.wait(for: 1).first)
        #expect(note.object == "tag")
        let info = try #require(note.userInfo)
        #expect(info["ids"] as? [Int] == [1, 2, 3])
        #expect(info["flag"] as? Bool == true)
        #expect(info["title"] as? String == "héllo ✓")
        #expect(info["data"] as? Data == Data([0, 1, 2, 255]))
        #expect((info["nested"] as? [String: [String: Double]])?["a"]?["b"] == 2.5)
        // Linux Foundation's own unarchiver drops or crashes on this ordinary string.
        #expect(info["null"] as? String == "$null")
        #expect(info["pid"] as? Int == Int(poster.pid))
    }

    @Test("a process may post and exit at once: all 1000 arrive, once each, in order")
    func postAndExit() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("burst"), object: nil, queue: nil, using: recorder.block)

        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "burst", "--count", "1000"])
        #expect(try await poster.awaitExit() == 0)
        // A duplicate or a gap would show here: the 1000th arrival ends the wait.
        let received = try await recorder.wait(for: 1000)
        #expect(received.compactMap(\.number) == Array(0..<1000))
    }

    @Test("posts from many threads at once all arrive, once each")
    func concurrentPosters() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("threads"), object: nil, queue: nil, using: recorder.block)
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "threads", "--count", "4000"])
        try await listener.awaitLines(1)  // {"ready": pid}
        // Eight threads share one center, its registry cache and its links.
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<500 { center.post(name: .init("threads"), object: nil, userInfo: ["i": thread * 500 + i]) }
        }
        let received = try await recorder.wait(for: 4000)
        #expect(Set(received.compactMap(\.number)) == Set(0..<4000))
        #expect(received.count == 4000)
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int }.sorted() == Array(0..<4000))
    }

    @Test("every listening process gets each notification exactly once")
    func fanOut() async throws {
        let container = TemporaryContainer()
        let listeners = try (0..<3).map { _ in
            try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "fan", "--count", "20"])
        }
        for listener in listeners { try await listener.awaitLines(1) }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "fan", "--count", "20"])
        #expect(try await poster.awaitExit() == 0)
        for listener in listeners {
            #expect(try await listener.awaitExit() == 0)
            let numbers = listener.jsonLines().compactMap { $0["i"] as? Int }
            #expect(numbers == Array(0..<20))
        }
        // A datagram socket queues 10 messages on Linux: some of the 60 may go through the spool.
        let summary = try #require(poster.jsonLines().first)
        #expect((summary["delivered"] as? Int ?? 0) + (summary["spooled"] as? Int ?? 0) == 60)
        if GroupNotificationCenter.Transport.processDefault == .sequencedPacket { #expect(summary["delivered"] as? Int == 60) }
    }

    @Test("name and object filters hold across processes")
    func filters() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "wanted", "--object", "A"])
        try await listener.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: container.url)
        try center.postReporting(name: .init("wanted"), object: "B", userInfo: ["i": 1])
        try center.postReporting(name: .init("other"), object: "A", userInfo: ["i": 2])
        try center.postReporting(name: .init("wanted"), object: nil, userInfo: ["i": 3])
        let report = try center.postReporting(name: .init("wanted"), object: "A", userInfo: ["i": 4])
        #expect(report.delivered == 1)
        let lines = try await listener.awaitLines(2)
        #expect(lines.count == 2)
        #expect(listener.jsonLines().last?["i"] as? Int == 4)
    }

    @Test("an observer of any name and any object sees everything")
    func wildcards() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: nil, object: nil, queue: nil, using: recorder.block)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "one", "--count", "2"])
        #expect(try await poster.awaitExit() == 0)
        let other = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "two", "--object", "x"])
        #expect(try await other.awaitExit() == 0)
        let received = try await recorder.wait(for: 3)
        #expect(received.map(\.name) == ["one", "one", "two"])
        #expect(received.last?.object == "x")
    }

    @Test("observers in the posting process are called too, asynchronously")
    func postingProcessObserves() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        let queue = OperationQueue()
        queue.name = "observer queue"
        center.addObserver(forName: .init("self"), object: nil, queue: queue, using: recorder.block)
        let report = try center.postReporting(name: .init("self"), object: nil, userInfo: ["i": 7])
        #expect(report.delivered == 1)
        let note = try #require(try await recorder.wait(for: 1).first)
        #expect(note.number == 7)
        #expect(note.onQueue == "observer queue", "the block runs on the queue it was given")
    }

    @Test("several centers in one process share one socket and all receive")
    func severalCenters() async throws {
        let container = TemporaryContainer()
        let first = try GroupNotificationCenter(containerURL: container.url)
        let second = try GroupNotificationCenter(containerURL: container.url)
        let a = Recorder(), b = Recorder()
        first.addObserver(forName: .init("both"), object: nil, queue: nil, using: a.block)
        second.addObserver(forName: .init("both"), object: nil, queue: nil, using: b.block)
        #expect(first.listenerStatus().count == 1)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "both", "--count", "5"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await a.wait(for: 5).compactMap(\.number) == Array(0..<5))
        #expect(try await b.wait(for: 5).compactMap(\.number) == Array(0..<5))
    }

    @Test("the async sequence yields notifications in order")
    func asyncSequence() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let notes = center.notifications(named: .init("seq"))
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "seq", "--count", "10"])
        var numbers: [Int] = []
        let collected = Task {
            var numbers: [Int] = []
            for await note in notes {
                numbers.append(note.userInfo?["i"] as? Int ?? -1)
                if numbers.count == 10 { break }
            }
            return numbers
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            collected.cancel()
        }
        numbers = await collected.value
        timeout.cancel()
        #expect(numbers == Array(0..<10))
        #expect(try await poster.awaitExit() == 0)
    }
}
