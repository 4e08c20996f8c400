import Foundation
import Synchronization
import Testing
import Wormhole

struct CartChanged: GroupMessage, Equatable {
    static let name = Notification.Name("cart.changed")
    var itemIDs: [Int]
    var note: String?
    var at: Date
}

@Suite("Typed messages", .throttled)
struct MessageTests {
    @Test("a typed message reaches typed and untyped observers, and another process's wormhole listen")
    func typedAndUntyped() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "cart.changed", "--count", "1"])
        try await listener.awaitError(containing: "listening")
        let typed = Recorder()
        let received = MessageBox<CartChanged>()
        center.addObserver(for: CartChanged.self, queue: nil) { message in received.put(message) }
        center.addObserver(forName: CartChanged.name, object: nil, queue: nil, using: typed.block)

        let message = CartChanged(itemIDs: [3, 4, 10], note: "hi", at: Date(timeIntervalSinceReferenceDate: 100))
        let report = try center.postReporting(message)
        #expect(report.delivered == 2)
        #expect(try received.take() == message)
        #expect(try await typed.wait(for: 1).first?.userInfo?["itemIDs"] as? [Int] == [3, 4, 10])
        #expect(try await listener.awaitExit() == 0)
        let info = try #require(listener.jsonLines().first?["userInfo"] as? [String: Any])
        #expect(info["itemIDs"] as? [Int] == [3, 4, 10])
    }

    @Test("a payload that does not decode into the type is a counted drop, and later messages still arrive")
    func undecodable() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let received = MessageBox<CartChanged>()
        center.addObserver(for: CartChanged.self, queue: nil) { message in received.put(message) }
        center.post(name: CartChanged.name, object: nil, userInfo: ["itemIDs": "not a list"])
        let good = CartChanged(itemIDs: [1], note: nil, at: Date(timeIntervalSinceReferenceDate: 0))
        center.post(good)
        #expect(try received.take() == good)
        #expect(center.statistics.messagesRejected == 1)
    }

    @Test("typed observers take the type after for:, then object:, includingRetained: and queue:, in Foundation's order")
    func foundationOrder() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let at = Date(timeIntervalSinceReferenceDate: 0)
        let first = CartChanged(itemIDs: [1], note: nil, at: at)
        center.post(first, object: "app", retain: true)
        let app = MessageBox<CartChanged>()
        let elsewhere = MessageBox<CartChanged>()
        center.addObserver(for: CartChanged.self, object: "app", includingRetained: true, queue: nil) { app.put($0) }
        // The retained message is from "app": an observer of another object does not start with it.
        center.addObserver(for: CartChanged.self, object: "elsewhere", includingRetained: true, queue: nil) { elsewhere.put($0) }
        #expect(try app.take() == first)
        let second = CartChanged(itemIDs: [2], note: nil, at: at)
        center.post(second, object: "app")
        let third = CartChanged(itemIDs: [3], note: nil, at: at)
        center.post(third, object: "elsewhere")
        #expect(try app.take() == second)
        #expect(try elsewhere.take() == third)
        #expect(app.waiting == 0 && elsewhere.waiting == 0)
        #expect(center.retainedMessage(for: CartChanged.self) == first)
    }

    @Test("typed messages as an async sequence")
    func sequence() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let messages = center.messages(for: CartChanged.self)
        for i in 0..<3 { center.post(CartChanged(itemIDs: [i], note: nil, at: Date(timeIntervalSinceReferenceDate: 0))) }
        let collected = Task {
            var ids: [Int] = []
            for await message in messages {
                ids += message.itemIDs
                if ids.count == 3 { break }
            }
            return ids
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            collected.cancel()
        }
        #expect(await collected.value == [0, 1, 2])
        timeout.cancel()
    }
}

/// Typed values handed from observer blocks to the test, with a bounded wait.
final class MessageBox<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let available = DispatchSemaphore(value: 0)

    /// Values put and not yet taken.
    var waiting: Int { values.withLock { $0.count } }

    func put(_ value: Value) {
        values.withLock { $0.append(value) }
        available.signal()
    }

    func take(timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) throws -> Value {
        guard available.wait(timeout: .now() + seconds) == .success else {
            Issue.record("nothing arrived in \(seconds) s", sourceLocation: sourceLocation)
            throw Peer.Timeout(description: "message")
        }
        return values.withLock { $0.removeFirst() }
    }
}
