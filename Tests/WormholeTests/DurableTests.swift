import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

@Suite("Durable listeners", .throttled)
struct DurableTests {
    @Test("a durable listener that is down for 1,000 posts gets all 1,000, in order, when it runs again")
    func downForAThousand() async throws {
        let container = TemporaryContainer()
        let first = try Peer("wormhole", ["listen", "--container", container.path, "--client", "widget", "--name", "d"])
        try await first.awaitError(containing: "listening")
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()

        let center = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<1000 {
            let report = try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": i])
            #expect(report.spooled == 1 && report.removedDeadListeners == 0 && report.failures.isEmpty)
        }
        let offline = try #require(center.listenerStatus().first)
        #expect(offline.clientIdentifier == "widget")
        #expect(offline.state == .offline)
        #expect(offline.spooledNotifications == 1000)

        let second = try Peer("wormhole", ["listen", "--container", container.path, "--client", "widget", "--name", "d", "--count", "1000"])
        #expect(try await second.awaitExit(timeout: 60) == 0)
        let numbers = second.jsonLines().compactMap { ($0["userInfo"] as? [String: Any])?["i"] as? Int }
        #expect(numbers == Array(0..<1000))
        try await pollUntil("the spool emptied") { center.listenerStatus().first?.spooledNotifications == 0 }
        #expect(center.listenerStatus().first?.spooledNotifications == 0, "delivered once: the spool is empty")
    }

    @Test("a durable listener killed while its spool's hand-over waits for its observers gets the whole spool on its next run")
    func killedDuringHandOver() async throws {
        let container = TemporaryContainer()
        let listen = ["--container", container.path, "--client", "widget", "--name", "d"]
        let first = try Peer("wormhole", ["listen"] + listen)
        try await first.awaitError(containing: "listening")
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        // More than the listener may hold undelivered, so that its hand-over stops for the observers.
        let count = 6_000
        let center = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<count {
            let report = try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": i])
            #expect(report.spooled == 1 && report.failures.isEmpty)
        }

        // Its observer's queue stays suspended: the hand-over stops once the observers hold their bound.
        let bound = DeliveryBacklog.Bound.standard.notifications
        let stalled = try Peer("wormhole-test-peer", ["listen-queued"] + listen + ["--report-received", "\(bound + 1)"])
        let received = try await stalled.awaitLines(2, timeout: 60)[1]
        let held = try #require(received.data(using: .utf8).flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Int] })
        let taken = try #require(held["receivedAtLeast"])
        #expect(taken > bound && taken < count, "the hand-over stopped after \(taken) of \(count)")
        stalled.signal(SIGKILL)
        _ = try? await stalled.awaitExit()
        // Nothing was removed while it waited: all of it comes again, once and in order.
        #expect(center.listenerStatus().first?.spooledNotifications == count)

        let second = try Peer("wormhole", ["listen"] + listen + ["--count", "\(count)"])
        #expect(try await second.awaitExit(timeout: 120) == 0)
        let numbers = second.jsonLines().compactMap { ($0["userInfo"] as? [String: Any])?["i"] as? Int }
        #expect(numbers == Array(0..<count))
        try await pollUntil("the spool emptied") { center.listenerStatus().first?.spooledNotifications == 0 }
    }

    @Test("a spool segment its listener has no descriptor to open as it takes it stays, and is delivered by a later drain, once")
    func segmentOpenedWithoutDescriptors() async throws {
        let container = TemporaryContainer()
        let listen = ["listen", "--container", container.path, "--client", "widget", "--name", "d"]
        let first = try Peer("wormhole-test-peer", listen)
        try await first.awaitLines(1)
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(try center.postReporting(name: .init("d"), object: nil, userInfo: ["i": 0]).spooled == 1)

        // Its first open of a segment fails as when the process is out of descriptors (a debug build's
        // injected fault): the drain after it, within a second, reads the segment.
        let listener = try Peer("wormhole-test-peer", listen, environment: ["WORMHOLE_INJECT_SEGMENT_OPEN": "EMFILE/1"])
        defer { listener.signal(SIGKILL) }
        try await pollUntil("the post arrived", timeout: 30) { listener.jsonLines().contains { $0["i"] as? Int == 0 } }
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == [0], "the post, once")
        #expect(listener.errorOutput.contains { $0.contains("cannot open spool segment") && $0.contains("errno 24") },
            "the segment was kept for a later drain: \(listener.errorOutput.suffix(3))")
        try await pollUntil("the spool emptied") { center.listenerStatus().first?.spooledNotifications == 0 }
    }

    @Test("a second live process claiming the same identity gets a clear error")
    func identityInUse() async throws {
        let container = TemporaryContainer()
        let first = try Peer("wormhole", ["listen", "--container", container.path, "--client", "app-widget"])
        try await first.awaitError(containing: "listening")
        let second = try Peer("wormhole", ["listen", "--container", container.path, "--client", "app-widget"])
        #expect(try await second.awaitExit() == 1)
        #expect(second.errorOutput.contains { $0.contains("identity in use") })
        #expect { _ = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "app-widget") } throws: {
            ($0 as? WormholeError)?.code == .identityInUse
        }
        first.signal(SIGKILL)
    }

    @Test("spooled notifications wait until this run adds an observer they match")
    func heldUntilObserved() async throws {
        let container = TemporaryContainer()
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
            durable.addObserver(forName: .init("a"), object: nil, queue: nil) { _ in }
            durable.addObserver(forName: .init("b"), object: nil, queue: nil) { _ in }
        }
        let watcher = try GroupNotificationCenter(containerURL: container.url)
        #expect(watcher.listenerStatus().first?.observing.compactMap(\.name) == ["a", "b"], "a durable run's subscriptions stay")
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "a", "--count", "3"])
        #expect(try await poster.awaitExit() == 0)
        let other = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "b", "--count", "2", "--start", "10"])
        #expect(try await other.awaitExit() == 0)
        #expect(watcher.listenerStatus().first?.spooledNotifications == 5)

        let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
        let a = Recorder(), alsoA = Recorder(), b = Recorder()
        // Added one after another, as start-up code does: both get the backlog.
        durable.addObserver(forName: .init("a"), object: nil, queue: nil, using: a.block)
        durable.addObserver(forName: .init("a"), object: nil, queue: OperationQueue(), using: alsoA.block)
        #expect(try await a.wait(for: 3).compactMap(\.number) == [0, 1, 2])
        #expect(try await alsoA.wait(for: 3).compactMap(\.number) == [0, 1, 2])
        #expect(b.all.isEmpty)
        // Added after that hand-over: what is held for it alone.
        durable.addObserver(forName: .init("b"), object: nil, queue: nil, using: b.block)
        #expect(try await b.wait(for: 2).compactMap(\.number) == [10, 11])
        #expect(a.all.count == 3 && alsoA.all.count == 3)
    }

    @Test("what is posted to a durable center before its first observer waits for it, also across a clean stop")
    func postedBeforeTheFirstObserver() async throws {
        let container = TemporaryContainer()
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
            durable.addObserver(forName: .init("d"), object: nil, queue: nil) { _ in }
        }
        // A run that adds no observer: its listener runs, and what reaches its socket waits there.
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
            #expect(durable.listenerStatus().first { $0.clientIdentifier == "w" }?.state == .alive)
            let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--count", "5"])
            #expect(try await poster.awaitExit() == 0)
            #expect(poster.jsonLines().first?["delivered"] as? Int == 5, "sent to the running listener's socket")
            // Released: the listener reads its socket as it ends, and keeps what nothing observed.
        }
        let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--count", "3", "--start", "5"])
        #expect(try await poster.awaitExit() == 0)
        let recorder = Recorder()
        durable.addObserver(forName: .init("d"), object: nil, queue: nil, using: recorder.block)
        #expect(try await recorder.wait(for: 8).compactMap(\.number) == Array(0..<8))
        let later = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--count", "1", "--start", "8"])
        #expect(try await later.awaitExit() == 0)
        #expect(try await recorder.wait(for: 9).compactMap(\.number) == Array(0..<9), "once each")
    }

    @Test("a record a poster writes again because a run took its segment as it wrote is not handed over again by the next run")
    func copyAfterACleanEnd() async throws {
        let container = TemporaryContainer()
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
            durable.addObserver(forName: .init("d"), object: nil, queue: nil) { _ in }
        }
        // The identity is down: a poster spools 0 into a new segment, appends 1, and stops itself there, before it
        // looks whether the segment still has its name.
        let poster = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--count", "3"],
            environment: ["WORMHOLE_STOP_AT": "spool.appended"])
        defer { poster.signal(SIGKILL) }
        try poster.waitUntilStopped(timeout: 20)
        // The next run takes the segment, gets 0 and 1, and ends cleanly.
        do {
            let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
            let recorder = Recorder()
            durable.addObserver(forName: .init("d"), object: nil, queue: nil, using: recorder.block)
            #expect(try await recorder.wait(for: 2).compactMap(\.number) == [0, 1])
        }
        // The poster finds its segment's name gone: it writes 1 again into a new segment, then 2.
        poster.signal(SIGCONT)
        #expect(try await poster.awaitExit() == 0)
        #expect(poster.jsonLines().first?["spooled"] as? Int == 3)

        let durable = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "w")
        let recorder = Recorder()
        durable.addObserver(forName: .init("d"), object: nil, queue: nil, using: recorder.block)
        #expect(try await recorder.wait(for: 1).compactMap(\.number) == [2], "the copy of 1 comes first in its segment")
        let later = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "d", "--count", "1", "--start", "3"])
        #expect(try await later.awaitExit() == 0)
        #expect(try await recorder.wait(for: 2).compactMap(\.number) == [2, 3])
    }

    @Test(
        "every observer start-up code adds, whatever its form, gets the whole backlog once and in order, then what was posted meanwhile",
        arguments: [false, true])
    func backlogReachesEveryForm(deliverNow: Bool) async throws {
        let container = TemporaryContainer()
        let name = WormholeMailbox.notificationName(forIdentifier: "forms").rawValue
        let listen = ["listen-forms", "--container", container.path, "--client", "w"]
        // The identity's first run registers the name, and is killed.
        let first = try Peer("wormhole-test-peer", listen + ["--until", "0"])
        try await first.awaitLines(1)
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()

        let offline = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", name, "--count", "200", "--message"])
        #expect(try await offline.awaitExit() == 0)
        #expect(offline.jsonLines().first?["spooled"] as? Int == 200)

        // Every form is added at start-up, one after another, with 20 ms of other start-up work between two (a
        // hand-over that began with the first would be over before the second); then ten more are posted at once.
        let second = try Peer(
            "wormhole-test-peer", listen + ["--until", "209", "--between", "20"] + (deliverNow ? ["--deliver-now"] : []))
        try await second.awaitLines(1)
        let meanwhile = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", name, "--count", "10", "--start", "200", "--message"])
        #expect(try await meanwhile.awaitExit() == 0)
        // The ready line, one line for each of the eight forms, and the late observer's.
        try await second.awaitLines(10, timeout: 60)
        let forms = second.jsonLines().filter { $0["form"] != nil }
        #expect(forms.count == 8)
        for form in forms {
            #expect(form["numbers"] as? [Int] == Array(0..<210), "\(form["form"] ?? "?")")
        }

        // An observer added after the hand-over gets what is posted from then on.
        let later = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", name, "--count", "1", "--start", "210", "--message"])
        #expect(try await later.awaitExit() == 0)
        try await second.awaitLines(11)
        #expect(second.jsonLines().compactMap { $0["late"] as? Int } == [210])
        second.signal(SIGKILL)
    }
}
