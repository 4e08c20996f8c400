import Foundation
import Observation
import Synchronization
import Testing
@testable import Wormhole

/// A model of a user interface, as a Swift 6 app writes one: its observers update its state directly, with no
/// queue and no `MainActor.assumeIsolated`.
@MainActor @Observable final class CartModel {
    var count = 0
    var items: [Int] = []
    var messages: [String] = []
    @ObservationIgnored private var tokens: [any NSObjectProtocol] = []

    func start(_ center: GroupNotificationCenter, _ mailbox: WormholeMailbox) {
        tokens.append(center.addObserver(forName: .init("cart.count"), object: nil) { note in
            MainActor.assertIsolated()
            self.count = note.userInfo?["count"] as? Int ?? -1
        })
        tokens.append(center.addObserver(for: CartChanged.self) { message in
            MainActor.assertIsolated()
            self.items = message.itemIDs
        })
        tokens.append(mailbox.listenForMessage(withIdentifier: "status") { message in
            MainActor.assertIsolated()
            self.messages.append(message as? String ?? "?")
        })
    }
}

@Suite("Observers on the caller's actor", .throttled)
struct ActorObservingTests {
    @Test("a main-actor model is updated by an untyped, a typed and a mailbox observer, from another process")
    @MainActor func mainActorModel() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let model = CartModel()
        model.start(center, WormholeMailbox(center))
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "cart.count", "--user-info", #"{"count": 3}"#])
        #expect(try await exitStatus(poster) == 0)
        // A typed message (its Date has no JSON form for the tool) and a mailbox message, from this process.
        center.post(CartChanged(itemIDs: [4, 5], note: nil, at: Date(timeIntervalSince1970: 1)))
        _ = try WormholeMailbox(center).passMessage("ready", identifier: "status")
        try await until("the model to be updated") { model.count == 3 && model.items == [4, 5] && model.messages == ["ready"] }
    }

    @Test("notifications reach an actor's observer in order, and none after removeObserver returns on that actor")
    @MainActor func orderAndRemoval() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let received = Mutex<[Int]>([])
        var removed: Int? = nil
        let token = MainActorBox()
        token.observer = center.addObserver(forName: .init("n"), object: nil) { note in
            MainActor.assertIsolated()
            let i = note.userInfo?["i"] as? Int ?? -1
            received.withLock { $0.append(i) }
            if i == 99, let observer = token.observer {
                center.removeObserver(observer)
                removed = received.withLock { $0.count }
            }
        }
        let marker = Mutex(false)
        center.addObserver(forName: .init("end"), object: nil, queue: nil) { _ in marker.withLock { $0 = true } }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "n", "--count", "300"])
        #expect(try await exitStatus(poster) == 0)
        let end = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "end"])
        #expect(try await exitStatus(end) == 0)
        try await until("the marker and the removal") { marker.withLock { $0 } && removed != nil }
        // The blocks queued for this actor before the removal have had their turn.
        for _ in 0..<50 { await Task.yield() }
        let all = received.withLock { $0 }
        #expect(all == Array(0...99))
        #expect(removed == 100)
    }

    @Test("what waits for a busy actor counts in the listener's backlog: past it the listener stops reading, and posters spool")
    func busyActor() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recipient = Recipient()
        await recipient.start(center)
        let released = DispatchSemaphore(value: 0), held = DispatchSemaphore(value: 0)
        let holding = Task { await recipient.hold(until: released, holding: held) }
        // The actor is held before anything is posted: what arrives waits for it from the first notification on.
        #expect(try await onDispatchThread { held.wait(timeout: .now() + 60) } == .success)
        let count = 6000
        let poster = try Peer("wormhole-test-peer", [
            "post", "--container", container.path, "--name", "busy", "--count", "\(count)", "--payload", "4096",
        ])
        let status = try await exitStatus(poster)
        let report = poster.jsonLines().first ?? [:]
        released.signal()
        await holding.value
        #expect(status == 0)
        // 24 MB offered to an actor that ran nothing: the listener stopped at its 16 MiB bound, the rest spooled.
        #expect((report["spooled"] as? Int ?? 0) > 0, "\(report)")
        let deadline = Date().addingTimeInterval(180)
        while await recipient.received.count < count && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await recipient.received == Array(0..<count))
        #expect(await recipient.bytes == count * 4096)
        await recipient.stop(center)
    }

    @Test("a nonisolated caller's block runs off the caller, in order")
    func nonisolated() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let received = Mutex<[Int]>([])
        center.addObserver(forName: .init("n"), object: nil) { note in
            received.withLock { $0.append(note.userInfo?["i"] as? Int ?? -1) }
        }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "n", "--count", "200"])
        #expect(try await exitStatus(poster) == 0)
        try await until("200 notifications") { received.withLock { $0.count } == 200 }
        #expect(received.withLock { $0 } == Array(0..<200))
    }
}

/// An actor whose observer records what it gets, and that can be kept busy. Its jobs run on a queue of its own,
/// so that holding it holds no thread of Swift's pool (two here), which the tests beside this one need.
actor Recipient {
    private let executor = QueueExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private(set) var received: [Int] = []
    private(set) var bytes = 0

    private var token: (any NSObjectProtocol)?

    func start(_ center: GroupNotificationCenter) {
        token = center.addObserver(forName: .init("busy"), object: nil) { note in
            self.received.append(note.userInfo?["i"] as? Int ?? -1)
            self.bytes += (note.userInfo?["blob"] as? Data)?.count ?? 0
        }
    }

    func stop(_ center: GroupNotificationCenter) {
        if let token { center.removeObserver(token) }
    }

    /// Holds the actor until `released` is signalled: it runs nothing else meanwhile. Signals `holding` first.
    func hold(until released: DispatchSemaphore, holding: DispatchSemaphore) {
        holding.signal()
        _ = released.wait(timeout: .now() + 120)
    }
}

/// The exit status of `peer`, waited for off the caller's actor, which stays free to run the observers' blocks
/// meanwhile (tests run side by side, and a blocked main actor would hold up another test's deliveries).
private func exitStatus(_ peer: Peer) async throws -> Int32 {
    try await Task.detached { try await peer.awaitExit(timeout: 60) }.value
}

/// Waits, giving the caller's actor its turns, until `condition` holds; fails the test after `seconds`.
@MainActor private func until(
    _ what: String, timeout seconds: Double = 180, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
            throw Peer.Timeout(description: what)
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Runs an actor's jobs one after another on a Dispatch queue of its own.
final class QueueExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "wormhole.tests.actor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

/// A token kept on the main actor, for an observer block on the main actor to read.
@MainActor
private final class MainActorBox {
    var observer: (any NSObjectProtocol)?
}
