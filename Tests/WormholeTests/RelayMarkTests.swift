import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeRelay

/// What the core does for a relay: the mark on its posts, everything through its spool, and copies of its
/// posts dropped by poster and sequence.
@Suite("Relay marks")
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
        _ = relay.addRelayObserver(forName: "n") { note in seen.withLock { $0.append(note) } }
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
}
