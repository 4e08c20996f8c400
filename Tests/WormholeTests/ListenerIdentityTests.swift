import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A socket of the test process's own, outside any container, of the transport under test: what a file planted
/// under a listener's name leads posters to. Non-blocking; closed and removed when dropped.
private final class DecoySocket {
    let path: String
    private let fd: CInt
    private let transport = GroupNotificationCenter.Transport.processDefault

    init(_ path: String) throws {
        self.path = path
        let type = transport == .datagram ? SOCK_DGRAM : SOCK_SEQPACKET
        fd = socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        try #require(path.utf8.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind \(path): errno \(errno)")
        if transport == .sequencedPacket { try #require(listen(fd, 8) == 0) }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The sizes of the messages that reached it, without waiting: a post has put its frame in the socket by the
    /// time it returns. A listening socket's pending connections are accepted and read to their end (a poster that
    /// refused the connection closed it with nothing sent: it reads as its end at once).
    func messagesReceived() -> [Int] {
        var sizes: [Int] = []
        guard transport == .sequencedPacket else {
            read(fd, into: &sizes)
            return sizes
        }
        while case let connection = accept(fd, nil, nil), connection >= 0 {
            read(connection, into: &sizes)
            close(connection)
        }
        return sizes
    }

    private func read(_ fd: CInt, into sizes: inout [Int]) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while case let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)), count > 0 { sizes.append(count) }
    }
}

/// A post goes only to the listener the registry names: a poster checks the socket file under its name (a socket
/// of this user, not a symbolic link) and the process at the other end before a connection counts, and spools
/// for the listener otherwise. Each test stops a listener, puts something under its name, posts, and resumes it.
@Suite("Posts reach only the listener the registry names", .throttled, .serialized)
struct ListenerIdentityTests {
    /// A listener of "guarded" in a fresh container, which exits once it got two notifications; stopped.
    private struct StoppedListener {
        let container: TemporaryContainer
        let peer: Peer
        let center: GroupNotificationCenter
        let socketPath: String
    }

    private func stoppedListener() async throws -> StoppedListener {
        let container = TemporaryContainer()
        let peer = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "guarded", "--count", "2"])
        try await peer.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let socketPath = try #require(center.listenerStatus().first { $0.pid == peer.pid }?.socketPath)
        try peer.suspend()
        return StoppedListener(container: container, peer: peer, center: center, socketPath: socketPath)
    }

    /// Resumes the listener, posts the second notification, and expects both, each once, in order.
    private func resumeAndExpectBoth(_ listener: StoppedListener, first: Int) async throws {
        listener.peer.signal(SIGCONT)
        try listener.center.postReporting(name: .init("guarded"), object: nil, userInfo: ["i": first + 1])
        #expect(try await listener.peer.awaitExit(timeout: 30) == 0)
        let numbers = listener.peer.jsonLines().compactMap { $0["i"] as? Int }
        #expect(numbers == [first, first + 1], "the listener gets the spooled notification once, then the next")
    }

    @Test("control: a stopped listener's own socket takes a post directly, with nothing refused")
    func ownSocketIsDirect() async throws {
        let listener = try await stoppedListener()
        let refusals = ListenerCheck.refusals.load(ordering: .relaxed)
        let report = try listener.center.postReporting(name: .init("guarded"), object: nil, userInfo: ["i": 0])
        #expect(report.delivered == 1)
        #expect(report.spooled == 0)
        #expect(ListenerCheck.refusals.load(ordering: .relaxed) == refusals)
        try await resumeAndExpectBoth(listener, first: 0)
    }

    @Test("a symbolic link put in place of a stopped listener's socket gets nothing: the post is spooled for the listener")
    func linkToAnotherSocket() async throws {
        let listener = try await stoppedListener()
        let outside = TemporaryContainer("outside")
        let decoy = try DecoySocket(outside.path + "/decoy.socket")
        let aside = outside.path + "/real.socket"
        try #require(rename(listener.socketPath, aside) == 0)
        try #require(symlink(decoy.path, listener.socketPath) == 0)
        let refusals = ListenerCheck.refusals.load(ordering: .relaxed)

        let report = try listener.center.postReporting(
            name: .init("guarded"), object: nil, userInfo: ["i": 0, "secret": "for the listener only"])
        #expect(report.delivered == 0, "not reported as delivered")
        #expect(report.spooled == 1, "spooled for the real listener")
        #expect(report.failures.isEmpty)
        #expect(report.removedDeadListeners == 0)
        #expect(decoy.messagesReceived() == [], "the socket the link leads to receives nothing")
        #expect(ListenerCheck.refusals.load(ordering: .relaxed) > refusals, "the refusal is counted")

        try #require(unlink(listener.socketPath) == 0)
        try #require(rename(aside, listener.socketPath) == 0)
        try await resumeAndExpectBoth(listener, first: 0)
    }

    @Test("a socket of another live process of this user moved under a stopped listener's name is refused by its pid")
    func anotherProcessSocket() async throws {
        let listener = try await stoppedListener()
        let outside = TemporaryContainer("outside")
        // The test process's own socket, of the listener's transport, owned by this user and no link: only the
        // process at the other end tells it from the listener's.
        let decoy = try DecoySocket(outside.path + "/decoy.socket")
        let aside = outside.path + "/real.socket"
        try #require(rename(listener.socketPath, aside) == 0)
        try #require(rename(decoy.path, listener.socketPath) == 0)

        let report = try listener.center.postReporting(name: .init("guarded"), object: nil, userInfo: ["i": 0])
        #expect(report.delivered == 0)
        #expect(report.spooled == 1)
        #expect(report.failures.isEmpty)
        #expect(decoy.messagesReceived() == [], "the other process's socket receives nothing")

        try #require(rename(listener.socketPath, decoy.path) == 0)
        try #require(rename(aside, listener.socketPath) == 0)
        try await resumeAndExpectBoth(listener, first: 0)
    }

    @Test("a link swapped in between a poster's look at the socket file and its connect is refused by the peer check")
    func linkSwappedInAfterTheLook() async throws {
        let listener = try await stoppedListener()
        let outside = TemporaryContainer("outside")
        let decoy = try DecoySocket(outside.path + "/decoy.socket")
        // The poster stops itself once it has found the listener's file in order, before it connects; it stays
        // after posting, so that what it says is not cut short by its exit.
        let poster = try Peer(
            "wormhole-test-peer",
            ["post", "--container", listener.container.path, "--name", "guarded", "--count", "1", "--stay"],
            environment: ["WORMHOLE_STOP_AT": "listener.connect"])
        try poster.waitUntilStopped(timeout: 20)
        let aside = outside.path + "/real.socket"
        try #require(rename(listener.socketPath, aside) == 0)
        try #require(symlink(decoy.path, listener.socketPath) == 0)
        poster.signal(SIGCONT)
        try await poster.awaitLines(1)

        let summary = try #require(poster.jsonLines().first)
        #expect(summary["delivered"] as? Int == 0, "\(summary)")
        #expect(summary["spooled"] as? Int == 1, "\(summary)")
        #expect(summary["failed"] as? Int == 0, "\(summary)")
        #expect(decoy.messagesReceived() == [], "the socket the link leads to receives nothing")
        try await poster.awaitError(containing: "held by process", timeout: 10)
        poster.signal(SIGKILL)

        try #require(unlink(listener.socketPath) == 0)
        try #require(rename(aside, listener.socketPath) == 0)
        try await resumeAndExpectBoth(listener, first: 0)
    }

    @Test("a link under a stopped listener's name does not get it taken for dead: its entry and spool stay, and it gets what was spooled")
    func linkDoesNotKillTheListener() async throws {
        let listener = try await stoppedListener()
        // A link to nothing: connecting through it fails as for a listener that is gone.
        try #require(unlink(listener.socketPath) == 0)
        try #require(symlink(listener.container.path + "/nowhere.socket", listener.socketPath) == 0)

        let report = try listener.center.postReporting(name: .init("guarded"), object: nil, userInfo: ["i": 0])
        #expect(report.spooled == 1)
        #expect(report.removedDeadListeners == 0)
        // Another listener registering probes the registered ones, and removes those it finds gone.
        let other = try Peer("wormhole-test-peer", ["listen", "--container", listener.container.path, "--name", "other"])
        try await other.awaitLines(1)
        let status = try #require(listener.center.listenerStatus().first { $0.pid == listener.peer.pid }, "still registered")
        #expect(status.state == .stopped)
        #expect(status.spooledNotifications == 1)
        other.signal(SIGKILL)

        // Resumed, the listener gets what was spooled for it (and binds its socket again once it finds the link).
        try await resumeAndExpectBoth(listener, first: 0)
    }
}
