import Testing
@testable import Wormhole
@testable import WormholeRelay

/// The one place a relay decides what crosses: which notifications go to the other device and as what, which
/// from it are posted here, and which names it observes. Pure decisions, no processes.
@Suite("Relay routes")
struct RelayRoutesTests {
    private func note(_ name: String, relayed: Bool = false) -> RelayedNotification {
        RelayedNotification(poster: RelayMark.poster(relayed: relayed), sequence: 1, name: name, object: nil, userInfo: nil)
    }

    private let request = GroupNotificationCenter.requestName(for: "lookup")
    private let reply = "wormhole.reply.0123456789abcdef0123456789abcdef"

    @Test("A notification goes out only through a route that sends it, and never when the relay posted it")
    func outgoingNotifications() {
        let routes = RelayRoutes([
            .notifications(named: "cart"), .notifications(named: "in", .incoming),
            .notifications(prefixed: "workout.", .outgoing),
        ])
        #expect(routes.outgoing(note("cart")) == .notification)
        #expect(routes.outgoing(note("workout.start")) == .notification)
        #expect(routes.outgoing(note("in")) == nil)
        #expect(routes.outgoing(note("other")) == nil)
        #expect(routes.outgoing(note("cart", relayed: true)) == nil)
    }

    @Test("A retained name crosses as its latest only, never as each notification")
    func retainedNotSent() {
        let routes = RelayRoutes([.notifications(prefixed: "now"), .retained(named: "nowPlaying")])
        #expect(routes.outgoing(note("nowPlaying")) == nil)
        #expect(routes.outgoing(note("nowShowing")) == .notification)
        #expect(routes.sentEntries == [SyncedEntry(kind: .retained, name: "nowPlaying")])
    }

    @Test("Reserved names match only a prefix that is itself reserved, going out and coming in")
    func reservedPrefix() {
        let plain = RelayRoutes([.notifications(prefixed: "")])
        #expect(plain.outgoing(note("wormhole.anything")) == nil)
        #expect(plain.outgoing(note("anything")) == .notification)
        // What the other side never sends this way is forged: a request or a reply would reach the group.
        #expect(plain.incoming("wormhole.request.lookup") == nil)
        #expect(plain.incoming(reply) == nil)
        #expect(plain.incoming("anything") == .notification)
        let reserved = RelayRoutes([.notifications(prefixed: "wormhole.")])
        #expect(reserved.outgoing(note("wormhole.anything")) == .notification)
        #expect(reserved.incoming("wormhole.anything") == .notification)
    }

    @Test("Requests go out as requests and come in as requests, each only the way their route says")
    func requests() {
        let outgoing = RelayRoutes([.requests(named: "lookup", .outgoing)])
        #expect(outgoing.outgoing(note(request)) == .request)
        #expect(outgoing.incoming(request) == nil)
        let incoming = RelayRoutes([.requests(named: "lookup", .incoming)])
        #expect(incoming.outgoing(note(request)) == nil)
        #expect(incoming.incoming(request) == .request)
    }

    @Test("A reply is taken by its name; one from the other device is posted only where requests go out")
    func replies() {
        let asking = RelayRoutes([.requests(named: "lookup", .outgoing)])
        let answering = RelayRoutes([.requests(named: "lookup", .incoming)])
        #expect(answering.outgoing(note(reply)) == .reply)
        #expect(asking.incoming(reply) == .reply)
        #expect(answering.incoming(reply) == nil)
        #expect(answering.incoming("wormhole.reply.") == nil)
    }

    @Test("The names observed: each sent name, every name for a prefix, requests named each, nothing twice")
    func observedNames() {
        let routes = RelayRoutes([
            .notifications(named: "a"), .notifications(named: "a"), .notifications(named: "b", .incoming),
            .requests(named: "lookup"), .value(named: "unread"),
        ])
        #expect(routes.observedNames == ["a", request])
        let prefixed = RelayRoutes([.notifications(named: "a"), .notifications(prefixed: "x"), .requests(named: "lookup")])
        #expect(prefixed.observedNames == [nil, request])
    }

    @Test("Retained names and values are sent and applied as their direction says")
    func syncedEntries() {
        let routes = RelayRoutes([.value(named: "out", .outgoing), .value(named: "in", .incoming), .retained(named: "both")])
        #expect(routes.sentEntries == [SyncedEntry(kind: .value, name: "out"), SyncedEntry(kind: .retained, name: "both")])
        #expect(!routes.receives(SyncedEntry(kind: .value, name: "out")))
        #expect(routes.receives(SyncedEntry(kind: .value, name: "in")))
        #expect(routes.receives(SyncedEntry(kind: .retained, name: "both")))
        #expect(!routes.receives(SyncedEntry(kind: .retained, name: "in")))
    }

    @Test("A link that cannot queue is refused with the error a send would meet; one not yet activated is not")
    func refusals() {
        #expect(RelayLinkEvents.refusal(.notActivated) == nil)
        let active = RelayLinkStatus(activation: .activated, isPaired: true, isCounterpartInstalled: true, isReachable: false)
        #expect(RelayLinkEvents.refusal(active) == nil)
        var status = active
        status.isCounterpartInstalled = false
        #expect(RelayLinkEvents.refusal(status)?.code == .counterpartNotInstalled)
        status.isPaired = false
        #expect(RelayLinkEvents.refusal(status)?.code == .notPaired)
        status.activation = .inactive
        #expect(RelayLinkEvents.refusal(status)?.code == .notActivated)
    }
}
