import Foundation
import Synchronization
import Testing
@testable import Wormhole

private struct CountUnread: GroupRequest {
    typealias Reply = Int
    static let name = Notification.Name("count.unread")
    var folder: String
}

private struct Failing: Error, CustomStringConvertible {
    var description: String { "the inbox is locked" }
}

/// Responders that await and throw, and requests and replies in the typed messages' words, across processes.
@Suite("Responders that await; typed requests", .throttled)
struct TypedRequestTests {
    @Test("a responder that awaits answers another process; one that throws gives it an error at once, not a hang")
    func asyncResponder() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let calls = Atomic<Int>(0)
        center.addResponder(forName: .init("lookup"), object: nil) { request in
            calls.add(1, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(50))          // awaits, as a lookup or a refresh does
            guard request.userInfo?["key"] as? String == "a" else { throw Failing() }
            return ["value": 42]
        }
        let asked = try Peer("wormhole", ["request", "--container", container.path, "--name", "lookup", "--user-info", #"{"key": "a"}"#])
        #expect(try await asked.awaitExit() == 0, "\(asked.errorOutput)")
        let reply = try #require(asked.jsonLines().first)
        #expect((reply["userInfo"] as? [String: Any])?["value"] as? Int == 42)

        let started = ContinuousClock.now
        let refused = try Peer("wormhole", [
            "request", "--container", container.path, "--name", "lookup", "--user-info", #"{"key": "b"}"#, "--timeout", "30",
        ])
        #expect(try await refused.awaitExit() == 1)
        #expect(refused.output.isEmpty)
        #expect(refused.errorOutput.joined().contains("the inbox is locked"), "\(refused.errorOutput)")
        #expect(ContinuousClock.now - started < .seconds(20), "at once, not at the timeout")
        #expect(calls.load(ordering: .relaxed) == 2)
    }

    @Test("a typed request gets its reply as its type from a responder in another process; one of another type is an error naming it")
    func typedRequestAcrossProcesses() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--name", "count.unread", "--reply", #"{"reply": 7}"#, "--count", "1",
        ])
        try await responder.awaitError(containing: "responding")
        let unread = try await center.request(CountUnread(folder: "inbox"), timeout: .seconds(20))
        #expect(unread == 7)
        #expect(try await responder.awaitExit() == 0)
        #expect((responder.jsonLines().first?["userInfo"] as? [String: String]) == ["folder": "inbox"], "its fields are the userInfo")

        let wrong = try Peer("wormhole", [
            "respond", "--container", container.path, "--name", "count.unread", "--reply", #"{"reply": "seven"}"#, "--count", "1",
        ])
        try await wrong.awaitError(containing: "responding")
        await #expect { _ = try await center.request(CountUnread(folder: "inbox"), timeout: .seconds(20)) } throws: { error in
            guard let error = error as? WormholeError else { return false }
            return error.code == .responderFailed && error.detail.contains("Int")
        }
        #expect(try await wrong.awaitExit() == 0)
    }

    @Test("a typed responder on the caller's actor answers an untyped request from another process; a bad request is an error")
    func typedResponder() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.addResponder(for: CountUnread.self) { request async throws -> Int in
            await Task.yield()
            return request.folder == "inbox" ? 3 : 0
        }
        // A long timeout: the responder awaits on Swift's two-thread pool, which a loaded machine's other tests can
        // hold for seconds; the reply, not the time, is what is checked.
        let asked = try Peer("wormhole", [
            "request", "--container", container.path, "--name", "count.unread", "--user-info", #"{"folder": "inbox"}"#,
            "--timeout", "120",
        ])
        #expect(try await asked.awaitExit(timeout: 150) == 0, "\(asked.errorOutput)")
        #expect((asked.jsonLines().first?["userInfo"] as? [String: Int]) == ["reply": 3])

        let malformed = try Peer("wormhole", [
            "request", "--container", container.path, "--name", "count.unread", "--user-info", #"{"folder": 12}"#,
            "--timeout", "120",
        ])
        #expect(try await malformed.awaitExit(timeout: 150) == 1)
        #expect(malformed.errorOutput.joined().contains("not a CountUnread"), "\(malformed.errorOutput)")

        // The form with a queue, in this process too.
        let other = try GroupNotificationCenter(containerURL: container.url)
        other.addResponder(for: CountUnread.self, queue: OperationQueue()) { request in request.folder.count }
        let first = try await other.request(CountUnread(folder: "archive"), timeout: .seconds(20))
        #expect(first == 0 || first == "archive".count, "the first of the two replies: \(first)")
    }
}
