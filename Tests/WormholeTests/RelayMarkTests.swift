import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeRelay

/// What the core does for a relay: the mark on its posts, everything through its spool, and copies of its
/// posts dropped by poster and sequence.
@Suite("Relay marks", .throttled)
struct RelayMarkTests {
    @Test("A relay's folder is its identifier when plain, else the identifier's bytes in hex")
    func folderNames() {
        #expect(WormholeRelay.folderName("wormhole.relay") == "wormhole.relay")
        #expect(WormholeRelay.folderName("../x") == "x-2e2e2f78")
        #expect(WormholeRelay.folderName(".hidden").hasPrefix("x-"))
        #expect(WormholeRelay.folderName("a/b").hasPrefix("x-"))
    }

    @Test("Only a relay's center draws marked poster ids")
    func marks() {
        for _ in 0..<10_000 {
            #expect(!RelayMark.isRelayed(RelayMark.poster(relayed: false)))
            #expect(RelayMark.isRelayed(RelayMark.poster(relayed: true)))
        }
        #expect(RelayMark.isRelayed(RelayMark.stablePoster(0)))
        #expect(RelayMark.stablePoster(42) == RelayMark.stablePoster(42))
    }

    @Test("A relay's center is spooled for: posts from other processes go to its spool, never its socket")
    func spooledFor() async throws {
        let container = TemporaryContainer()
        let relay = try GroupNotificationCenter(relayContainerURL: container.url, clientIdentifier: "relay")
        let seen = Mutex<[RelayedNotification]>([])
        _ = relay.addRelayObservers([("n", { note in seen.withLock { $0.append(note) } })])
        relay.deliverSpooledNotifications()
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "n", "--count", "20"])
        #expect(try await poster.awaitExit() == 0)
        let report = try #require(poster.jsonLines().last)
        #expect(report["spooled"] as? Int == 20)
        #expect(report["delivered"] as? Int == 0)
        try await pollUntil("the relay's observer got all 20") { seen.withLock { $0.count } == 20 }
        let notes = seen.withLock { $0 }
        #expect(notes.map(\.sequence) == Array(1...20))
        #expect(notes.allSatisfy { !$0.isRelayed })
    }

    @Test("A relay's post is marked, and one posted again as the same poster and sequence reaches observers once")
    func copiesDropped() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "n"])
        try await listener.awaitLines(1)
        let relay = try GroupNotificationCenter(relayContainerURL: container.url, clientIdentifier: "relay")
        // A copy is its poster's last or close behind it; one far ahead (forged) holds back no more than the window.
        for sequence: UInt64 in [1, 2, 2, 1, 3, 3 + Limits.relayCopyWindow * 2, 4] {
            try relay.postRelayed(
                name: "n", object: nil, userInfo: try UserInfoCodec.encode(["i": Int(sequence), "pid": 7], maximumSize: 1 << 20),
                retain: false, stablePoster: 99, sequence: sequence)
        }
        // An ordinary post after them, so that the copies have had their chance to arrive first.
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.post(name: Notification.Name("n"), object: nil, userInfo: ["i": 100, "pid": 8])
        try await listener.awaitLines(7)
        let received = listener.jsonLines().compactMap { $0["i"] as? Int }
        #expect(received == [1, 2, 3, 3 + Int(Limits.relayCopyWindow) * 2, 4, 100])
    }

    @Test("A relay's posts that went to a listener's spool, then to its socket once the spool was taken, arrive whole and in order")
    func spooledThenDirect() async throws {
        let container = TemporaryContainer()
        let listen = ["listen", "--container", container.path, "--client", "w", "--name", "n"]
        // A durable listener that is not running: what the relay posts waits in its spool.
        let first = try Peer("wormhole-test-peer", listen + ["--count", "1"])
        try await first.awaitLines(1)
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        // A relay's center, posting as a stable poster and as itself by turns: its segments hold both.
        let relay = try GroupNotificationCenter(relayContainerURL: container.url, clientIdentifier: "relay")
        func post(_ range: Range<Int>) throws -> PostReport {
            var report = PostReport()
            for i in range {
                let archive = try UserInfoCodec.encode(["i": i, "pid": 7], maximumSize: 1 << 20)
                let one = try relay.postRelayed(
                    name: "n", object: nil, userInfo: archive, retain: false, stablePoster: i % 2 == 0 ? 99 : nil,
                    sequence: UInt64(1000 + i))
                report.delivered += one.delivered
                report.spooled += one.spooled
            }
            return report
        }
        #expect(try post(0..<20).spooled == 20)
        // Its next run stops itself right after it took the spool, before it reads its socket: what is posted
        // meanwhile goes to the socket, and is read in the same drain as what was taken.
        let second = try Peer("wormhole-test-peer", listen + ["--count", "30"], environment: ["WORMHOLE_STOP_AT": "spool.take"])
        try second.waitUntilStopped(timeout: 20)
        #expect(try post(20..<30).delivered == 10)
        second.signal(SIGCONT)
        #expect(try await second.awaitExit(timeout: 30) == 0, "\(second.errorOutput)")
        let received = second.jsonLines().compactMap { $0["i"] as? Int }
        #expect(received == Array(0..<30), "the relay's spooled posts before those that followed them in the socket")
    }

    @Test("A relay's center opened again keeps its names registered until its observers are back: posts meanwhile wait for it")
    func namesKeptAcrossRuns() async throws {
        let pair = RelayPair(routes: ["notifications:n"])
        let first = try await pair.startRelay(.phone)
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        // Its next run, before it adds its observers.
        let relay = try GroupNotificationCenter(relayContainerURL: pair.phone.url, clientIdentifier: "wormhole.relay")
        let poster = try Peer("wormhole-test-peer", ["post", "--container", pair.phone.path, "--name", "n"])
        #expect(try await poster.awaitExit() == 0)
        #expect(poster.jsonLines().last?["spooled"] as? Int == 1, "\(poster.output)")
        let seen = Mutex<[RelayedNotification]>([])
        _ = relay.addRelayObservers([("n", { note in seen.withLock { $0.append(note) } })])
        relay.deliverSpooledNotifications()
        try await pollUntil("the relay's observer got it") { seen.withLock { $0.count } == 1 }
    }

    @Test("A relay's observers removed as it closes leave its names registered: posts meanwhile wait for its next start")
    func namesKeptWhenClosed() async throws {
        let container = TemporaryContainer()
        let relay = try GroupNotificationCenter(relayContainerURL: container.url, clientIdentifier: "relay")
        let seen = Mutex<[Int]>([])
        let record: GroupNotificationCenter.RelayObserver = ("n", { note in seen.withLock { $0.append(Int(note.sequence)) } })
        relay.removeRelayObservers(relay.addRelayObservers([record]))
        // Past a few of the listener's housekeeping passes, which mend its entry: no signal tells that something
        // did not happen.
        try await Task.sleep(for: Limits.housekeepingInterval.duration * 2.5)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "n", "--count", "3"])
        #expect(try await poster.awaitExit() == 0)
        #expect(poster.jsonLines().last?["spooled"] as? Int == 3, "\(poster.output)")
        #expect(seen.withLock { $0 }.isEmpty)
        _ = relay.addRelayObservers([record])
        relay.deliverSpooledNotifications()
        try await pollUntil("the relay's observer got them") { seen.withLock { $0.count } == 3 }
        #expect(seen.withLock { $0 } == [1, 2, 3])
    }
}
