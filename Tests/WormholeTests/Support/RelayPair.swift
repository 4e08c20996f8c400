import Foundation
import Testing
import WormholeTestSupport

/// Two groups, the "phone"'s and the "watch"'s, each in a container of its own, and the stand-in link between
/// them: relays, posters and observers run as processes of their own on each side.
final class RelayPair: Sendable {
    enum Side: String, Sendable, CaseIterable {
        case phone
        case watch

        var other: Side { self == .phone ? .watch : .phone }
    }

    let phone = TemporaryContainer("relay-phone")
    let watch = TemporaryContainer("relay-watch")
    let link = TemporaryContainer("relay-link")
    let routes: [String]

    /// `routes` as `wormhole-relay-peer` takes them, the same on both sides (`KIND:NAME[:DIRECTION]`).
    init(routes: [String]) {
        self.routes = routes
    }

    func container(_ side: Side) -> TemporaryContainer { side == .phone ? phone : watch }

    /// Starts the relay of `side` and waits until it is started.
    func startRelay(_ side: Side, routes: [String]? = nil) async throws -> Peer {
        var arguments = ["--container", container(side).path, "--link", link.path, "--side", side.rawValue]
        for route in routes ?? self.routes { arguments += ["--route", route] }
        let relay = try Peer("wormhole-relay-peer", arguments)
        try await relay.awaitLines(1)
        return relay
    }

    /// Starts a durable observer of `name` on `side` (it sees what was posted while it was not running), and
    /// waits until it is ready.
    func startObserver(_ side: Side, name: String, client: String = "observer") async throws -> Peer {
        let observer = try Peer(
            "wormhole-test-peer", ["listen", "--container", container(side).path, "--name", name, "--client", client])
        try await observer.awaitLines(1)
        return observer
    }

    /// Posts `count` notifications of `name` on `side`, numbered from `start`, from a process of their own, and
    /// waits for it to exit; returns its pid, which the observers print with each.
    @discardableResult
    func post(_ side: Side, name: String, count: Int, start: Int = 0) async throws -> Int {
        let poster = try Peer(
            "wormhole-test-peer",
            ["post", "--container", container(side).path, "--name", name, "--count", "\(count)", "--start", "\(start)"])
        #expect(try await poster.awaitExit() == 0)
        return Int(poster.pid)
    }

    /// What an observer printed: for each poster's pid, the numbers in the order received.
    static func received(by observer: Peer) -> [Int: [Int]] {
        var byPoster: [Int: [Int]] = [:]
        for line in observer.jsonLines() where line["ready"] == nil {
            guard let pid = line["pid"] as? Int, let i = line["i"] as? Int else { continue }
            byPoster[pid, default: []].append(i)
        }
        return byPoster
    }

    /// Whether the counterpart of `side` is reachable for messages (the stand-in's reachability, which the tests
    /// flap).
    func setReachable(_ reachable: Bool) {
        FileLink.setReachable(reachable, directory: link.url)
    }
}

extension RelayPair {
    /// Sets or clears a fault of the stand-in link.
    func set(_ fault: FileLink.Fault, _ on: Bool) {
        FileLink.set(fault, on, directory: link.url)
    }

    /// The relay's last status line (`wormhole-relay-peer` prints one on each change).
    static func lastStatus(of relay: Peer) -> [String: Any]? {
        relay.jsonLines().last { $0["ready"] == nil }
    }
}
