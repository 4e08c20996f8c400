import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

@Suite("Requests and replies", .throttled)
struct RequestReplyTests {
    @Test("a request is answered by a responder in another process")
    func answeredByAnotherProcess() async throws {
        let container = TemporaryContainer()
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--name", "ask", "--reply", #"{"answer": 42}"#, "--count", "1",
        ])
        try await responder.awaitError(containing: "responding")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let reply = try await center.request(name: .init("ask"), object: "widget", userInfo: ["q": "life"], timeout: .seconds(20))
        #expect(reply.name.rawValue == "ask")
        #expect(reply.object as? String == "widget")
        #expect(reply.userInfo?["answer"] as? Int == 42)
        #expect(try await responder.awaitExit() == 0)
        let asked = try #require(responder.jsonLines().first)
        #expect(asked["name"] as? String == "ask")
        #expect(asked["object"] as? String == "widget")
        // The responder sees the asker's userInfo and nothing of how the request travels.
        #expect(asked["userInfo"] as? [String: String] == ["q": "life"])
        #expect(center.statistics.repliesDropped == 0)
    }

    @Test("a requester keeps nothing of an answered request until its timeout: 2,000 answered with an hour left each")
    func answeredRequestsHoldNothing() async throws {
        let container = TemporaryContainer()
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--name", "ask", "--reply", #"{"ok": true}"#, "--count", "2000",
        ])
        try await responder.awaitError(containing: "responding")
        let center = try GroupNotificationCenter(containerURL: container.url)
        for n in 0..<2000 {
            let reply = try await center.request(name: .init("ask"), userInfo: ["n": n], timeout: .seconds(3600))
            #expect(reply.userInfo?["ok"] as? Bool == true)
        }
        #expect(try await responder.awaitExit() == 0)
        let held = center.replies.pending.held
        #expect(held.requests == 0, "no request is waited on")
        #expect(held.deadlines <= 64, "the deadline queue was compacted as requests ended: \(held.deadlines)")
        // A timeout still ends a request nobody answers, at its time.
        let quiet = try GroupNotificationCenter(containerURL: container.url)
        quiet.addResponder(forName: .init("quiet"), object: nil, queue: OperationQueue()) { _ in
            Thread.sleep(forTimeInterval: 2)
            return nil
        }
        let started = ContinuousClock.now
        await #expect { _ = try await center.request(name: .init("quiet"), timeout: .milliseconds(300)) } throws: {
            ($0 as? WormholeError)?.code == .timedOut
        }
        #expect(ContinuousClock.now - started < .seconds(2), "at its timeout, not when the responder is done")
    }

    @Test("a durable responder that was not running answers on its next run, within the deadline")
    func durableResponderAnswersOnItsNextRun() async throws {
        let container = TemporaryContainer()
        try await registerDurableResponder(container)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let asked = Task {
            try await center.request(name: .init("ask"), userInfo: ["n": 1], timeout: .seconds(30)).userInfo?["ok"] as? Bool
        }
        try await pollUntil("the request is spooled") { center.statistics.spooled == 1 }
        #expect(center.listenerStatus().first { $0.clientIdentifier == "helper" }?.spooledNotifications == 1, "it waits in the responder's spool")
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "helper", "--name", "ask", "--reply", #"{"ok": true}"#,
            "--count", "1",
        ])
        #expect(try await responder.awaitExit() == 0)
        #expect(try await asked.value == true)
        #expect((responder.jsonLines().first?["userInfo"] as? [String: Int]) == ["n": 1])
    }

    @Test("no responder is an error at once; observers of every name neither count nor see a request")
    func noResponder() async throws {
        let container = TemporaryContainer()
        let everything = try Peer("wormhole", ["listen", "--container", container.path, "--count", "1"])
        try await everything.awaitError(containing: "listening")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let started = ContinuousClock.now
        await #expect { _ = try await center.request(name: .init("ask"), timeout: .seconds(30)) } throws: {
            ($0 as? WormholeError)?.code == .noResponder
        }
        #expect(ContinuousClock.now - started < .seconds(10), "at once, not at the timeout")
        // Nobody posts under the reserved names but requests and replies.
        #expect { try center.postReporting(name: .init("wormhole.request.ask"), object: nil) } throws: {
            ($0 as? WormholeError)?.code == .invalidNotification
        }
        #expect { try center.postReporting(name: .init("wormhole.reply.x"), object: nil) } throws: {
            ($0 as? WormholeError)?.code == .invalidNotification
        }
        center.post(name: .init("after"), object: nil)
        #expect(try await everything.awaitExit() == 0)
        #expect(everything.jsonLines().map { $0["name"] as? String } == ["after"])
    }

    @Test("two responders: the first reply wins, the other is dropped and counted")
    func twoResponders() async throws {
        let container = TemporaryContainer()
        let responders = try ["one", "two"].map { which in
            try Peer("wormhole", [
                "respond", "--container", container.path, "--name", "ask", "--reply", #"{"from": "\#(which)"}"#, "--count", "1",
            ])
        }
        for responder in responders { try await responder.awaitError(containing: "responding") }
        let center = try GroupNotificationCenter(containerURL: container.url)
        let reply = try await center.request(name: .init("ask"), timeout: .seconds(20))
        #expect(["one", "two"].contains(reply.userInfo?["from"] as? String))
        for responder in responders { #expect(try await responder.awaitExit() == 0, "each answered") }
        try await pollUntil("the second reply is dropped") { center.statistics.repliesDropped == 1 }
    }

    @Test("an expired request is never answered: a responder that starts after the deadline does not run for it")
    func expiredRequestNeverAnswered() async throws {
        let container = TemporaryContainer()
        try await registerDurableResponder(container)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let started = ContinuousClock.now
        await #expect {
            _ = try await center.request(name: .init("ask"), userInfo: ["which": "expired"], timeout: .milliseconds(300))
        } throws: {
            ($0 as? WormholeError)?.code == .timedOut
        }
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        // A second request, spooled behind the first, proves the responder ran and skipped the first.
        let live = Task {
            try await center.request(name: .init("ask"), userInfo: ["which": "live"], timeout: .seconds(30)).userInfo?["ok"] as? Bool
        }
        try await pollUntil("both requests are spooled") { center.statistics.spooled == 2 }
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "helper", "--name", "ask", "--reply", #"{"ok": true}"#,
            "--count", "1",
        ])
        #expect(try await responder.awaitExit() == 0)
        #expect(try await live.value == true)
        #expect(responder.jsonLines().map { ($0["userInfo"] as? [String: String])?["which"] } == ["live"])
        #expect(responder.errorOutput.contains { $0.contains("expired before its responder ran") })
    }

    @Test("a requester that exited: the reply is dropped, and the responder and later requests go on")
    func requesterExited() async throws {
        let container = TemporaryContainer()
        try await registerDurableResponder(container)
        let watcher = try GroupNotificationCenter(containerURL: container.url)
        let requester = try Peer("wormhole", ["request", "--container", container.path, "--name", "ask", "--timeout", "60"])
        try await pollUntil("the request is spooled") {
            watcher.listenerStatus().first { $0.clientIdentifier == "helper" }?.spooledNotifications == 1
        }
        requester.signal(SIGKILL)
        _ = try await requester.awaitExit()
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "helper", "--name", "ask", "--count", "1",
        ])
        #expect(try await responder.awaitExit() == 0)
        #expect(responder.jsonLines().count == 1, "it answered: the request had not expired")
        #expect(responder.errorOutput.contains { $0.contains("its requester is gone") })
        // Nothing wedged: the next run answers the next request.
        let next = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "helper", "--name", "ask", "--reply", #"{"n": 2}"#,
            "--count", "1",
        ])
        try await next.awaitError(containing: "responding")
        let reply = try await watcher.request(name: .init("ask"), timeout: .seconds(20))
        #expect(reply.userInfo?["n"] as? Int == 2)
        #expect(try await next.awaitExit() == 0)
    }

    @Test("a durable center's replies come to its process, not to its identity")
    func durableRequester() async throws {
        let container = TemporaryContainer()
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--name", "ask", "--reply", #"{"ok": true}"#, "--count", "1",
        ])
        try await responder.awaitError(containing: "responding")
        let asker = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "asker")
        let reply = try await asker.request(name: .init("ask"), timeout: .seconds(20))
        #expect(reply.userInfo?["ok"] as? Bool == true)
        #expect(try await responder.awaitExit() == 0)
        let listeners = asker.listenerStatus()
        let durable = listeners.first { $0.clientIdentifier == "asker" }
        let replies = listeners.first { $0.observing.contains { $0.name?.hasPrefix("wormhole.reply.") == true } }
        #expect(durable?.observing.isEmpty != false, "the durable identity observes no reply name")
        #expect(replies != nil && replies?.clientIdentifier == nil && replies?.pid == getpid(), "this process's own listener does")
    }

    @Test("a responder whose process observes too many names to list keeps its mark beside every name")
    func markPastEntryLimit() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.addResponder(forName: .init("ask"), object: nil, queue: nil) { _ in ["ok": true] }
        // 140 observers of a 4,000-byte name and a 4,000-byte object each: 1.1 MiB, past an entry's limit.
        for index in 0..<140 {
            let name = String(format: "%04d.", index) + String(repeating: "n", count: 3995)
            center.addObserver(forName: .init(name), object: name, queue: nil) { _ in }
        }
        let own = try #require(center.listenerStatus().first { $0.pid == getpid() })
        #expect(own.subscriptions == [Subscription(name: nil, object: nil), Subscription(name: "wormhole.request.ask", object: nil)])
        let asker = try Peer("wormhole", ["request", "--container", container.path, "--name", "ask", "--timeout", "20"])
        #expect(try await asker.awaitExit() == 0, "\(asker.errorOutput)")
        #expect((asker.jsonLines().first?["userInfo"] as? [String: Bool]) == ["ok": true])
    }

    @Test("wormhole request refuses a bad timeout or a reserved name as a mistake in the command line, exit 2")
    func requestCommandLine() async throws {
        let container = TemporaryContainer()
        let registered = try Peer("wormhole", ["respond", "--container", container.path, "--name", "ask", "--count", "0"])
        #expect(try await registered.awaitExit() == 0)
        for (arguments, says) in [
            (["--name", "ask", "--timeout", "0"], "--timeout"), (["--name", "ask", "--timeout", "-1"], "--timeout"),
            (["--name", "ask", "--timeout", "90000"], "--timeout"), (["--name", "ask", "--timeout", "soon"], "--timeout"),
            (["--name", "wormhole.reply.x"], "reserved"), (["--timeout", "1"], "needs --name"),
        ] {
            let asker = try Peer("wormhole", ["request", "--container", container.path] + arguments)
            #expect(try await asker.awaitExit() == 2, "\(arguments)")
            #expect(asker.errorOutput.first?.contains(says) == true, "\(arguments): \(asker.errorOutput)")
        }
    }

    @Test("cancelling the task ends the wait at once; the late reply is dropped and counted")
    func cancelled() async throws {
        let container = TemporaryContainer()
        try await registerDurableResponder(container)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let asked = Task { try await center.request(name: .init("ask"), timeout: .seconds(60)).name.rawValue }
        try await pollUntil("the request is spooled") { center.statistics.spooled == 1 }
        asked.cancel()
        await #expect(throws: CancellationError.self) { try await asked.value }
        let responder = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "helper", "--name", "ask", "--count", "1",
        ])
        #expect(try await responder.awaitExit() == 0)
        try await pollUntil("the late reply is dropped") { center.statistics.repliesDropped == 1 }
    }

    @Test("a responder in the same process answers, on its queue; removing it makes requests fail at once")
    func sameProcess() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let queue = OperationQueue()
        queue.name = "responder"
        let responder = center.addResponder(forName: .init("sum"), object: nil, queue: queue) { request in
            let numbers = request.userInfo?["numbers"] as? [Int] ?? []
            return ["sum": numbers.reduce(0, +), "queue": OperationQueue.current?.name ?? ""]
        }
        let reply = try await center.request(name: .init("sum"), userInfo: ["numbers": [1, 2, 3]], timeout: .seconds(20))
        #expect(reply.userInfo?["sum"] as? Int == 6)
        #expect(reply.userInfo?["queue"] as? String == "responder")
        center.removeObserver(responder)
        await #expect { _ = try await center.request(name: .init("sum"), timeout: .seconds(20)) } throws: {
            ($0 as? WormholeError)?.code == .noResponder
        }
    }

    @Test("a responder on an actor answers other processes in that actor's isolation; removed, it answers no more")
    func actorResponder() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let tally = Tally()
        await tally.start(center)
        for (add, total) in [(2, 2), (5, 7)] {
            let asker = try Peer("wormhole", [
                "request", "--container", container.path, "--name", "tally", "--user-info", #"{"add": \#(add)}"#,
                // Long: the actor runs on Swift's pool, which tests that block while they wait can hold for a while.
                "--timeout", "120",
            ])
            #expect(try await asker.awaitExit(timeout: 150) == 0, "\(asker.errorOutput)")
            #expect((asker.jsonLines().first?["userInfo"] as? [String: Int]) == ["total": total])
        }
        #expect(await tally.total == 7)
        await tally.stop(center)
        let late = try Peer("wormhole", ["request", "--container", container.path, "--name", "tally", "--timeout", "20"])
        #expect(try await late.awaitExit() == 1)
        #expect(late.errorOutput.contains { $0.contains("no responder") })
    }

    @Test("forged requests and replies are dropped and counted; a responder replies under no ordinary name")
    func forgedRequestsAndReplies() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let answered = Recorder()
        center.addResponder(forName: .init("ask"), object: nil, queue: nil) { request in
            answered.block(request)
            return ["ok": true]
        }
        let victim = Recorder()
        center.addObserver(forName: .init("victim"), object: nil, queue: nil, using: victim.block)
        let replyTo = try center.replies.replyName(for: center)
        let now = Int64(clamping: Sys.uptimeNanoseconds)
        let forged: [[String: Any]] = [
            ["id": "a", "replyTo": "victim", "remaining": Int64(10_000_000_000), "stamp": now],  // an ordinary name
            ["id": "b", "replyTo": replyTo, "remaining": Int64(-5), "stamp": now],  // no time left
            ["id": "c", "replyTo": replyTo, "remaining": Int64(10_000_000_000), "stamp": now + 3_600_000_000_000],  // a later boot
            ["id": "", "replyTo": replyTo, "remaining": Int64(10_000_000_000), "stamp": now],  // no id
            ["id": "d", "replyTo": replyTo, "remaining": "soon", "stamp": now],  // not a number
        ]
        for envelope in forged {
            let archive = try UserInfoCodec.encode([RequestEnvelope.key: envelope], maximumSize: Limits.maximumPayloadSize)
            _ = try center.endpoint.post(name: "wormhole.request.ask", object: nil, userInfo: archive)
        }
        // A huge time left is cut to a day, and answered; so is the marker that ends the test.
        let huge = try UserInfoCodec.encode(
            [RequestEnvelope.key: ["id": "e", "replyTo": replyTo, "remaining": Int64.max, "stamp": now]], maximumSize: Limits.maximumPayloadSize)
        _ = try center.endpoint.post(name: "wormhole.request.ask", object: nil, userInfo: huge)
        // A reply to a request never made.
        _ = try center.endpoint.post(name: replyTo, object: "never-asked", userInfo: nil)
        try await answered.wait(for: 1)
        try await pollUntil("every forgery is counted") {
            center.statistics.requestsDropped == forged.count && center.statistics.repliesDropped == 2
        }
        #expect(answered.all.count == 1)
        #expect(victim.all.isEmpty, "no reply went to an ordinary name")
    }
}

/// Keeps a total that requests add to, on its own actor.
private actor Tally {
    var total = 0
    private var token: (any NSObjectProtocol)?

    func start(_ center: GroupNotificationCenter) {
        token = center.addResponder(forName: .init("tally"), object: nil) { request in
            self.total += request.userInfo?["add"] as? Int ?? 0
            return ["total": self.total]
        }
    }

    func stop(_ center: GroupNotificationCenter) {
        if let token { center.removeObserver(token) }
    }
}

/// Registers a durable responder `helper` for `ask` in a process that then exits: requests wait in its spool.
private func registerDurableResponder(_ container: TemporaryContainer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let register = try Peer("wormhole", [
        "respond", "--container", container.path, "--create", "--client", "helper", "--name", "ask", "--count", "0",
    ])
    #expect(try await register.awaitExit() == 0, "\(register.errorOutput)", sourceLocation: sourceLocation)
}
