import Foundation
import Testing
import Wormhole
import WormholeRelay
@testable import WormholeBridge

/// The bridge's files in the container, planted, damaged or cut short: links where its folders go, FIFOs where
/// its files go, a damaged state, a `wormhole bridge` killed at each step between taking and handing over, and a
/// full disk. Nothing hangs, nothing crashes, nothing is lost or posted twice.
@Suite(.serialized, .throttled, .enabled(if: NATSServer.isAvailable, "nats-server is not installed: apt-get install nats-server (these tests start their own servers)"))
struct BridgeContainerTests {
    private let routes: [RelayRoute] = [.notifications(named: "n")]

    @Test("a symbolic link at bridge/, at its folder or at its outbox is refused, and nothing is written through it")
    func linksWhereTheBridgesFoldersGo() throws {
        let elsewhere = TemporaryContainer("elsewhere")
        let address = NATSServerAddress(host: "127.0.0.1", port: 1)
        for link in ["bridge", "bridge/wormhole.bridge", "bridge/wormhole.bridge/outbox"] {
            let container = TemporaryContainer("links")
            _ = try GroupNotificationCenter(containerURL: container.url)
            let path = container.path + "/" + link
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: elsewhere.path)
            #expect(throws: WormholeError.self, "\(link)") {
                try WormholeBridge(containerURL: container.url, server: address, routes: routes)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty, "\(link)")
        }
    }

    @Test("FIFOs at state and posted, before the start and while it runs, are moved aside, never waited on", .timeLimit(.minutes(5)))
    func fifosWhereTheBridgesFilesGo() async throws {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: "n", routes: routes)
        let b = try BridgeTests.Host(observing: nil, routes: routes)
        let folder = a.container.path + "/bridge/wormhole.bridge"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(mkfifo(folder + "/state", 0o600) == 0)
        #expect(mkfifo(folder + "/posted", 0o600) == 0)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try b.post("n", 1)
        try await a.recorder.wait(for: 1)
        // Planted while it runs: the state once saved, and the log emptied.
        try await Task.sleep(for: .milliseconds(1500))
        for name in ["state", "posted"] {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
            #expect(mkfifo(folder + "/" + name, 0o600) == 0)
        }
        for i in 2...20 { try b.post("n", i) }
        try await a.recorder.wait(for: 20)
        try await Task.sleep(for: .milliseconds(1500))
        a.closeBridge()
        // Its next run reads the state it wrote in the FIFO's place.
        try await a.startBridge(server)
        for i in 21...22 { try b.post("n", i) }
        try await a.recorder.wait(for: 22)
        #expect(a.recorder.all.map(\.number) == Array(1...22).map { Optional($0) })
        let moved = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.contains(".moved-") }
        #expect(moved.count >= 2, "\(moved)")
    }

    @Test("a damaged state: the bridge starts anew as a new host, and carries what is posted from then on")
    func damagedState() async throws {
        let server = try await NATSServer()
        let a = try BridgeTests.Host(observing: "n", routes: routes)
        let b = try BridgeTests.Host(observing: "n", routes: routes)
        try await a.startBridge(server)
        try await b.startBridge(server)
        try b.post("n", 1)
        try await a.recorder.wait(for: 1)
        a.closeBridge()
        let state = a.container.path + "/bridge/wormhole.bridge/state"
        for damage in [Data("damaged".utf8), Data(repeating: 0xFF, count: 100_000), Data()] {
            try damage.write(to: URL(fileURLWithPath: state))
            try await a.startBridge(server)
            a.closeBridge()
        }
        try await a.startBridge(server)
        try b.post("n", 2)
        try await a.recorder.wait(for: 2)
        try a.post("n", 3)
        try await a.recorder.wait(for: 3)
        try await b.recorder.wait(for: 3)
        #expect(a.recorder.all.map(\.number) == [1, 2, 3])
        #expect(b.recorder.all.map(\.number) == [1, 2, 3])
    }

    // MARK: Killed between two steps

    /// A `wormhole bridge` on `container` to `server`, stopping itself at `point` when given.
    private func toolBridge(_ container: TemporaryContainer, _ server: NATSServer, stoppingAt point: String? = nil) throws -> Peer {
        try Peer(
            "wormhole", ["bridge", "-c", container.path, "--server", server.url, "n"],
            environment: point.map { ["WORMHOLE_STOP_AT": $0] } ?? [:])
    }

    private func connected(_ peer: Peer) -> Bool {
        peer.jsonLines().last?["connection"] as? String == "connected"
    }

    @Test(
        "a sending bridge killed after keeping, after publishing, or after saving its state: each crosses once, in order",
        arguments: ["bridge.kept", "bridge.published", "bridge.saved"])
    func sendingBridgeKilledBetweenSteps(point: String) async throws {
        let server = try await NATSServer()
        let receiver = try BridgeTests.Host(observing: "n", routes: routes)
        try await receiver.startBridge(server)
        let sender = TemporaryContainer("killed")
        let center = try GroupNotificationCenter(containerURL: sender.url)
        let stopping = try toolBridge(sender, server, stoppingAt: point)
        try await pollUntil("the bridge connected") { connected(stopping) }
        for i in 1...5 { try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }
        try await pollUntil("stopped at \(point)") { stopping.isStopped }
        stopping.signal(SIGKILL)
        _ = try await stopping.awaitExit()
        let again = try toolBridge(sender, server)
        try await pollUntil("the bridge connected again") { connected(again) }
        for i in 6...8 { try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }
        try await receiver.recorder.wait(for: 8, timeout: 30)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.recorder.all.map(\.number) == Array(1...8).map { Optional($0) }, "killed at \(point)")
        again.signal(SIGTERM)
        _ = try await again.awaitExit()
    }

    @Test(
        "a receiving bridge killed after posting, after logging, or after acknowledging: each is posted once, in order",
        arguments: ["bridge.posted", "bridge.logged", "bridge.acknowledged"])
    func receivingBridgeKilledBetweenSteps(point: String) async throws {
        let server = try await NATSServer()
        let sender = try BridgeTests.Host(observing: nil, routes: routes)
        try await sender.startBridge(server)
        let receiver = try BridgeTests.Host(observing: "n", routes: routes)
        let stopping = try toolBridge(receiver.container, server, stoppingAt: point)
        try await pollUntil("the bridge connected") { connected(stopping) }
        for i in 1...5 { try sender.post("n", i) }
        try await pollUntil("stopped at \(point)") { stopping.isStopped }
        stopping.signal(SIGKILL)
        _ = try await stopping.awaitExit()
        let again = try toolBridge(receiver.container, server)
        try await pollUntil("the bridge connected again") { connected(again) }
        for i in 6...8 { try sender.post("n", i) }
        try await receiver.recorder.wait(for: 8, timeout: 30)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.recorder.all.map(\.number) == Array(1...8).map { Optional($0) }, "killed at \(point)")
        again.signal(SIGTERM)
        _ = try await again.awaitExit()
    }

    // MARK: A full disk

    @Test("a full disk while the bridge posts: it goes on posting, says its state is not saved, and saves it once there is room")
    func fullDiskWhileThePostsCome() async throws {
        guard let disk = try SmallDisk() else { return }
        defer { disk.unmount() }
        let server = try await NATSServer()
        let container = URL(fileURLWithPath: disk.path + "/c")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let center = try GroupNotificationCenter(containerURL: container)
        let recorder = Recorder()
        _ = center.addObserver(forName: .init("n"), object: nil, queue: nil, using: recorder.block)
        let a = try WormholeBridge(containerURL: container, server: server.address, routes: routes)
        a.start()
        try await pollUntil("the bridge connected") { a.status.connection == .connected }
        let b = try BridgeTests.Host(observing: nil, routes: routes)
        try await b.startBridge(server)
        try b.post("n", 1)
        try await recorder.wait(for: 1)
        let reconnects = a.status.reconnects
        disk.fill()
        #expect(disk.freeBytes == 0)
        // Kept full: what the container frees (a spool segment, a state replaced) is taken again at once.
        let more = disk.path + "/filler-more"
        let filling = Task.detached {
            let fd = open(more, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            defer { close(fd) }
            let page = [UInt8](repeating: 0, count: 4096)
            while !Task.isCancelled {
                while page.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
                while page.withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) > 0 {}
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        for i in 2...30 {
            try b.post("n", i)
            try await Task.sleep(for: .milliseconds(100))
        }
        try await recorder.wait(for: 30, timeout: 30)
        try await pollUntil("the failure said") { a.status.lastError?.contains("not saved") == true }
        #expect(a.status.connection == .connected)
        // A state it cannot save is no reason to leave the server.
        #expect(a.status.reconnects == reconnects)
        filling.cancel()
        _ = await filling.result
        try FileManager.default.removeItem(atPath: disk.path + "/filler")
        try FileManager.default.removeItem(atPath: disk.path + "/filler-more")
        try await Task.sleep(for: .milliseconds(1500))
        a.close()
        // The state saved says all 30 were posted: none comes again.
        let again = try WormholeBridge(containerURL: container, server: server.address, routes: routes)
        again.start()
        try await pollUntil("the bridge connected again") { again.status.connection == .connected }
        try b.post("n", 31)
        try await recorder.wait(for: 31)
        try await Task.sleep(for: .milliseconds(500))
        #expect(recorder.all.map(\.number) == Array(1...31).map { Optional($0) })
        again.close()
    }
}
