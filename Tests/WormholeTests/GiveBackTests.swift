import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A durable consumer that stops before running all it was handed gives the rest back: the identity's next run
/// gets each of those once, in order.
@Suite("Consumers that stop early give back what they did not run", .throttled)
struct GiveBackTests {
    @Test("listen --count K takes exactly K of what waits for a durable identity; the next run gets the rest")
    func countTakesExactly() async throws {
        let container = TemporaryContainer()
        try await registerDurableListener(container, client: "d", name: "n")
        let center = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<5 { _ = try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }

        let first = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d", "--name", "n", "--count", "1"])
        #expect(try await first.awaitExit() == 0)
        #expect(numbers(first) == [0])
        let second = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d", "--name", "n", "--count", "4"])
        #expect(try await second.awaitExit() == 0)
        #expect(numbers(second) == [1, 2, 3, 4])
        try await pollUntil("the spool emptied") { spooled(center, "d") == 0 }
    }

    @Test("listen --client stopped by SIGTERM while its reader is slow gives back what it did not print")
    func signalWithASlowReader() async throws {
        let container = TemporaryContainer()
        try await registerDurableListener(container, client: "d", name: "n")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let total = 3000
        for i in 0..<total { _ = try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }

        // A reader that reads nothing until the listener is told to stop: its pipe fills, and the listener's
        // printer waits in write(2) with the rest of the backlog handed over to it and not printed.
        let slow = try SlowReaderProcess(["listen", "--container", container.path, "--client", "d", "--name", "n"])
        try await pollUntil("the listener's standard output is full") { slow.unreadBytes >= 60_000 }
        slow.signal(SIGTERM)
        let printed = try await slow.readToEndAndWait()
        #expect(printed.exitStatus == 0)
        let firstRun = printed.lines.compactMap(number(in:))
        #expect(firstRun == Array(0..<firstRun.count), "in order, from the first")
        #expect(firstRun.count < total, "stopped early: \(firstRun.count) printed")

        let rest = total - firstRun.count
        let second = try Peer("wormhole", [
            "listen", "--container", container.path, "--client", "d", "--name", "n", "--count", String(rest),
        ])
        #expect(try await second.awaitExit(timeout: 90) == 0)
        #expect(numbers(second) == Array(firstRun.count..<total), "the rest, once each, in order")
        try await pollUntil("the spool emptied") { spooled(center, "d") == 0 }
    }

    @Test("a durable listener killed while its observer holds what it was handed gets it all again on its next run")
    func killedWithNotificationsWaiting() async throws {
        let container = TemporaryContainer()
        try await registerDurableListener(container, client: "d", name: "n")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let total = 3000
        for i in 0..<total { _ = try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }

        // Its printer waits in write(2) with the rest handed over to it; then the process is killed, not stopped.
        let slow = try SlowReaderProcess(["listen", "--container", container.path, "--client", "d", "--name", "n"])
        try await pollUntil("the listener's standard output is full") { slow.unreadBytes >= 60_000 }
        slow.signal(SIGKILL)
        let printed = try await slow.readToEndAndWait()
        let firstRun = printed.lines.compactMap(number(in:))
        #expect(firstRun == Array(0..<firstRun.count))
        #expect(firstRun.count < total, "killed early: \(firstRun.count) printed")

        _ = try center.postReporting(name: .init("n"), object: nil, userInfo: ["i": total])
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d", "--name", "n"])
        try await pollUntil("the next run reaches the one posted after", timeout: 90) { numbers(next).last == total }
        next.signal(SIGTERM)
        _ = try? await next.awaitExit()
        // At least once: it starts again at or before where the first run stopped printing, and misses nothing.
        let again = numbers(next)
        let start = try #require(again.first)
        #expect(start <= firstRun.count, "nothing it was handed and did not print is lost")
        #expect(again == Array(start...total), "each once in this run, in order")
    }

    @Test("respond --count 1 with three requests waiting answers exactly the one it printed; the next run the others")
    func respondAnswersWhatItPrinted() async throws {
        let container = TemporaryContainer()
        let register = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "r", "--name", "job", "--count", "0",
        ])
        #expect(try await register.awaitExit() == 0)
        let asker = try GroupNotificationCenter(containerURL: container.url)
        let answered = Answered()
        var askers: [Task<Bool?, any Error>] = []
        for n in 0..<3 {
            askers.append(Task { [asker] in
                let reply = try await asker.request(name: .init("job"), userInfo: ["n": n], timeout: .seconds(60))
                answered.add(n)
                return reply.userInfo?["done"] as? Bool
            })
            // One at a time, so that they wait in the spool in this order.
            try await pollUntil("request \(n) waits") { spooled(asker, "r") == n + 1 }
        }

        let first = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "r", "--name", "job", "--reply", #"{"done": true}"#,
            "--count", "1",
        ])
        #expect(try await first.awaitExit() == 0)
        #expect(first.jsonLines().count == 1)
        let printed = try #require(first.jsonLines().first.flatMap { ($0["userInfo"] as? [String: Any])?["n"] as? Int })
        #expect(printed == 0)
        try await pollUntil("the printed request is answered") { answered.all == [0] }
        #expect(spooled(asker, "r") == 2, "the two it did not print wait for the next run")

        let second = try Peer("wormhole", [
            "respond", "--container", container.path, "--client", "r", "--name", "job", "--reply", #"{"done": true}"#,
            "--count", "2",
        ])
        #expect(try await second.awaitExit() == 0)
        #expect(second.jsonLines().compactMap { ($0["userInfo"] as? [String: Any])?["n"] as? Int } == [1, 2])
        for task in askers { #expect(try await task.value == true) }
        #expect(answered.all.sorted() == [0, 1, 2])
    }

    @Test("a durable center's sequence that stops after two gives back the rest for the identity's next run")
    func sequenceGivesBack() async throws {
        let container = TemporaryContainer()
        try await registerDurableListener(container, client: "s", name: "n")
        let poster = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<10 { _ = try poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }

        var taken: [Int] = []
        do {
            let center = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: "s")
            for await note in center.notifications(named: .init("n")) {
                taken.append(note.userInfo?["i"] as? Int ?? -1)
                if taken.count == 2 { break }
            }
            // The sequence ended when the loop left it; the center goes at the end of this scope.
            try await pollUntil("what it did not take is given back") { returnedFiles(container) > 0 }
        }
        #expect(taken == [0, 1])
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "s", "--name", "n", "--count", "8"])
        #expect(try await next.awaitExit() == 0)
        #expect(numbers(next) == Array(2..<10))
        try await pollUntil("the spool emptied") { spooled(poster, "s") == 0 }
    }
}

/// The requests answered, in the order their replies came.
private final class Answered: Sendable {
    private let numbers = Mutex<[Int]>([])
    func add(_ number: Int) { numbers.withLock { $0.append(number) } }
    var all: [Int] { numbers.withLock { $0 } }
}

/// Registers durable identity `client` observing `name`, then ends it: what is posted under `name` spools for it.
private func registerDurableListener(_ container: TemporaryContainer, client: String, name: String) async throws {
    let register = try Peer("wormhole", ["listen", "--container", container.path, "--create", "--client", client, "--name", name])
    try await register.awaitError(containing: "listening")
    register.signal(SIGKILL)
    _ = try? await register.awaitExit()
}

private func number(in line: String) -> Int? {
    guard let data = line.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        return nil
    }
    return (object["userInfo"] as? [String: Any])?["i"] as? Int
}

private func numbers(_ peer: Peer) -> [Int] {
    peer.output.compactMap(number(in:))
}

private func spooled(_ center: GroupNotificationCenter, _ client: String) -> Int? {
    center.listenerStatus().first { $0.clientIdentifier == client }?.spooledNotifications
}

private func returnedFiles(_ container: TemporaryContainer) -> Int {
    let spool = container.url.appendingPathComponent("spool")
    let folders = (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? []
    return folders.reduce(0) { count, folder in
        let names = (try? FileManager.default.contentsOfDirectory(atPath: spool.appendingPathComponent(folder).path)) ?? []
        return count + names.filter { $0.hasPrefix(SpoolFolder.returnedPrefix) }.count
    }
}

/// The `wormhole` tool with a standard output nobody reads until ``readToEndAndWait()``.
private final class SlowReaderProcess: Sendable {
    let process: Process
    private let output: Foundation.Pipe

    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = Peer.productsDirectory.appendingPathComponent("wormhole")
        process.arguments = arguments
        output = Foundation.Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The bytes written to standard output and not read yet.
    var unreadBytes: Int {
        var count: CInt = 0
        guard ioctl(output.fileHandleForReading.fileDescriptor, UInt(FIONREAD), &count) == 0 else { return 0 }
        return Int(count)
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Reads standard output to its end, and waits for the exit (at most 60 seconds).
    func readToEndAndWait() async throws -> (lines: [String], exitStatus: Int32) {
        let handle = output.fileHandleForReading
        let process = self.process
        // Bounded: a process that never closes its output is killed, which ends the read.
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if process.isRunning { kill(pid, SIGKILL) } }
        return try await onDispatchThread {
            let data = handle.readDataToEndOfFile()
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning {
                guard Date() < deadline else { throw Peer.Timeout(description: "the slow reader's process to exit") }
                usleep(10_000)
            }
            let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
            return (lines, process.terminationStatus)
        }
    }
}

/// What several observers of one run give back comes again once each, in the order posted.
@Suite("Give-back from several observers", .throttled)
struct GiveBackMergeTests {
    /// Registers `client` as a durable identity observing `names`, then ends it.
    private func register(_ container: TemporaryContainer, client: String, names: [String]) async throws {
        let center = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: client)
        for name in names { center.addObserver(forName: .init(name), object: nil, queue: OperationQueue()) { _ in } }
        _ = center
    }

    private func spoolFolder(_ container: TemporaryContainer) -> URL? {
        let spool = container.url.appendingPathComponent("spool")
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? []
        return folders.first.map { spool.appendingPathComponent($0) }
    }

    /// Run 1 of `client`: observers of `names` on suspended queues (they run nothing) are handed what waits, then
    /// the center goes; `beforeRelease` runs just before.
    private func runHandedNothingRun(
        _ container: TemporaryContainer, client: String, names: [String], expect count: Int,
        beforeRelease: () throws -> Void = {}
    ) async throws {
        let center = try GroupNotificationCenter(containerURL: container.url, clientIdentifier: client)
        var queues: [OperationQueue] = []
        for name in names {
            let queue = OperationQueue()
            queue.isSuspended = true
            queues.append(queue)
            center.addObserver(forName: .init(name), object: nil, queue: queue) { _ in Issue.record("ran") }
        }
        center.deliverSpooledNotifications()
        try await pollUntil("handed over") { center.statistics.received >= count }
        try await Task.sleep(for: .milliseconds(300))
        try beforeRelease()
        withExtendedLifetime(queues) {}
    }

    private func numbers(_ lines: [String]) -> [Int] {
        lines.compactMap { line in
            guard let data = line.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return (object["userInfo"] as? [String: Any])?["i"] as? Int
        }
    }

    @Test("two observers of one name that both ran nothing: the next run gets each once")
    func twoObserversSameName() async throws {
        let container = TemporaryContainer()
        try await register(container, client: "d", names: ["n"])
        let poster = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<5 { _ = try poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }
        try await runHandedNothingRun(container, client: "d", names: ["n", "n"], expect: 5)
        // A sentinel posted after: it comes after everything given back.
        _ = try poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": 99])
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d", "--name", "n"])
        try await pollUntil("the sentinel") { numbers(next.output).contains(99) }
        next.signal(SIGTERM)
        _ = try? await next.awaitExit()
        #expect(numbers(next.output) == [0, 1, 2, 3, 4, 99])
    }

    @Test("a returned file planted with the largest number neither stops this run giving back nor is read")
    func plantedLargestNumber() async throws {
        let container = TemporaryContainer()
        try await register(container, client: "d", names: ["n"])
        let poster = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<5 { _ = try poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": i]) }
        let warnings = Mutex<[String]>([])
        GroupNotificationCenter.setWarningHandler { line in warnings.withLock { $0.append(line) } }
        defer { GroupNotificationCenter.setWarningHandler(nil) }
        try await runHandedNothingRun(container, client: "d", names: ["n"], expect: 5) {
            let folder = try #require(spoolFolder(container))
            _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("returned-ffffffffffffffff").path, contents: Data())
        }
        #expect(warnings.withLock { $0 }.allSatisfy { !$0.contains("are lost") })
        _ = try poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": 99])
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d", "--name", "n"])
        try await pollUntil("the sentinel") { numbers(next.output).contains(99) }
        next.signal(SIGTERM)
        _ = try? await next.awaitExit()
        #expect(numbers(next.output) == [0, 1, 2, 3, 4, 99])
    }

    @Test("two observers of two names: the next run's observer of every name gets them in the order posted")
    func twoNamesOrder() async throws {
        let container = TemporaryContainer()
        try await register(container, client: "d", names: ["x", "y"])
        let poster = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<6 { _ = try poster.postReporting(name: .init(i % 2 == 0 ? "y" : "x"), object: nil, userInfo: ["i": i]) }
        try await runHandedNothingRun(container, client: "d", names: ["x", "y"], expect: 6)
        _ = try poster.postReporting(name: .init("x"), object: nil, userInfo: ["i": 99])
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "d"])
        try await pollUntil("the sentinel") { numbers(next.output).contains(99) }
        next.signal(SIGTERM)
        _ = try? await next.awaitExit()
        #expect(numbers(next.output) == [0, 1, 2, 3, 4, 5, 99])
    }
}
