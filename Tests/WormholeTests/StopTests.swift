import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

/// iOS kills a process that is suspended while it holds a file lock in a shared container (0xdead10cc), and it
/// suspends extensions at any instant. These tests stop processes as iOS would, at random instants and at every
/// named point of the write and drain paths, and read `/proc/locks`: no stopped process may hold a lock on a
/// container file, and every other process's posts must complete meanwhile.
@Suite("Stopped at any instant: no file lock held, nobody kept waiting", .serialized, .throttled)
struct StopTests {
    /// The files and folders under `path`, as `/proc/locks` names them: `MAJOR:MINOR:INODE`, the device in hex.
    private func lockNames(under path: String) -> Set<String> {
        var names = Set<String>()
        func add(_ file: String) {
            var info = stat()
            guard lstat(file, &info) == 0 else { return }
            let device = UInt64(info.st_dev)
            let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
            let minor = (device & 0xff) | ((device >> 12) & ~0xff)
            names.insert(String(format: "%02x:%02x:%llu", major, minor, UInt64(info.st_ino)))
        }
        add(path)
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String { add(path + "/" + relative) }
        return names
    }

    /// The pids `/proc/locks` shows holding a lock (of any kind) on a file or folder under `path`.
    private func pidsHoldingLocks(under path: String) throws -> [Int32] {
        let names = lockNames(under: path)
        let table = try procFile("/proc/locks")
        return table.split(separator: "\n").compactMap { line -> Int32? in
            // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; a waiter's line starts "1: -> FLOCK ...".
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).filter { $0 != "->" }
            guard fields.count >= 6, let pid = Int32(fields[4]), names.contains(String(fields[5])) else { return nil }
            return pid
        }
    }

    /// Stops `pid` and waits until the system reports it stopped, polling its state (nothing signals it).
    private func stop(_ pid: Int32) throws {
        kill(pid, SIGSTOP)
        let deadline = Date().addingTimeInterval(5)
        while !isStopped(pid) {
            guard Date() < deadline else { throw Peer.Timeout(description: "stop of \(pid)") }
            usleep(100)
        }
    }

    private func isStopped(_ pid: Int32) -> Bool {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].dropFirst(2).first == "T"
    }

    @Test("the lock check sees a lock when one is held: a stopped process holding flock on a container file")
    func positiveControl() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.addObserver(forName: .init("c"), object: nil, queue: nil) { _ in }
        let holder = try Peer("wormhole-test-peer", ["hold-lock", "--file", container.path + "/registry.changes"])
        try await holder.awaitLines(1)
        try holder.suspend()
        #expect(try pidsHoldingLocks(under: container.path) == [holder.pid])
        holder.signal(SIGKILL)
        _ = try? await holder.awaitExit()
        #expect(try pidsHoldingLocks(under: container.path).isEmpty)
    }

    @Test("2,000 stops at random instants under load: no stopped process holds a lock, every post completes",
          .timeLimit(.minutes(10)))
    func randomStops() async throws {
        // Minutes of blocking waits: on a thread of their own, so that Swift's pool (two threads here) stays free
        // for the tests beside this one.
        try await onDispatchThread { try self.randomStopsRun() }
    }

    private func randomStopsRun() throws {
        let container = TemporaryContainer()
        let path = container.path
        var generator = SeededGenerator(seed: 10)
        // Listeners (one durable), a process adding and removing observers all along, and posters of small
        // and 200 KiB notifications (those go as shared memory files, or through the spool when a listener has
        // not read 16 MiB of them; every other such poster finds no memory file, and always spools).
        var processes: [Peer] = [
            try Peer("wormhole-test-peer", ["listen", "--container", path, "--name", "s"]),
            try Peer("wormhole-test-peer", ["listen", "--container", path, "--name", "s", "--client", "durable"]),
            try Peer("wormhole-chaos", ["receiver", "--container", path]),
        ]
        for process in processes { try process.waitForLines(1) }
        func poster(_ index: Int) throws -> Peer {
            let large = index % 3 == 0
            return try Peer("wormhole-test-peer", [
                "post", "--container", path, "--name", large ? "s" : "chaos", "--count", large ? "40" : "5000",
                "--payload", large ? "200000" : "0",
            ], environment: index % 6 == 0 ? Self.noMemoryFile : [:])
        }
        var posters = try (0..<2).map(poster)
        var started = 2

        let center = try GroupNotificationCenter(containerURL: container.url)
        var stops = 0
        var violations: [String] = []
        var slowest: Duration = .zero
        let clock = ContinuousClock()
        while stops < 2000 {
            for (index, done) in posters.enumerated() where !done.process.isRunning {
                posters[index] = try poster(started)
                started += 1
            }
            let candidates = processes + posters
            guard let victim = candidates.randomElement(using: &generator), victim.process.isRunning else { continue }
            // A random instant: the victim has run for up to two milliseconds since it last resumed.
            usleep(UInt32.random(in: 0...2_000, using: &generator))
            do {
                try stop(victim.pid)
            } catch {
                continue  // it exited meanwhile
            }
            stops += 1
            let holders = try pidsHoldingLocks(under: path)
            if !holders.isEmpty { violations.append("stop \(stops): pids \(holders) hold locks in the container") }
            let began = clock.now
            let report = try center.postReporting(name: .init("s"), object: nil, userInfo: ["stop": stops])
            slowest = max(slowest, clock.now - began)
            #expect(report.failures.isEmpty, "\(report)")
            kill(victim.pid, SIGCONT)
        }
        #expect(violations.isEmpty, "\(violations.prefix(5))")
        #expect(stops == 2000)
        print("stop test: \(stops) stops, \(violations.count) with a container lock held, slowest post while a process was stopped: \(slowest)")
        // The listeners and the observer churner lived through it all (a crash of theirs would go unseen otherwise).
        for process in processes where !process.process.isRunning {
            Issue.record("pid \(process.pid) ended: \(process.errorOutput.prefix(3).joined(separator: " | "))")
        }
        for process in processes + posters { process.signal(SIGKILL) }
        processes.removeAll()
    }

    /// One named point, the process that reaches it, and what makes it get there.
    private struct Point {
        let name: String
        let arguments: (String) -> [String]
        let executable: String
        var environment: [String: String] = [:]
        /// Done once the process runs, to make it reach the point.
        var trigger: (String) throws -> Void = { _ in }
    }

    private var points: [Point] {
        [
            Point(name: "registry.write", arguments: { ["listen", "--container", $0, "--name", "p"] }, executable: "wormhole-test-peer"),
            Point(name: "file.replace", arguments: { ["listen", "--container", $0, "--name", "p"] }, executable: "wormhole-test-peer"),
            Point(name: "identity.claim", arguments: { ["listen", "--container", $0, "--client", "claimer"] }, executable: "wormhole"),
            Point(name: "retained.store", arguments: { ["post", "--container", $0, "--name", "p", "--retain"] }, executable: "wormhole"),
            Point(name: "spool.append", arguments: { ["post", "--container", $0, "--name", "p", "--payload", "200000"] },
                  executable: "wormhole-test-peer", environment: Self.noMemoryFile),
            Point(name: "spool.name", arguments: { ["post", "--container", $0, "--name", "p", "--payload", "200000"] },
                  executable: "wormhole-test-peer", environment: Self.noMemoryFile),
            Point(name: "spool.take", arguments: { ["listen", "--container", $0, "--name", "big"] }, executable: "wormhole-test-peer",
                  trigger: { try Self.postLarge(in: $0) }),
            Point(name: "spool.drain", arguments: { ["listen", "--container", $0, "--name", "big"] }, executable: "wormhole-test-peer",
                  trigger: { try Self.postLarge(in: $0) }),
        ]
    }

    /// Where large frames go through the spool: no memory file can be made (injected in debug builds).
    static let noMemoryFile = ["WORMHOLE_INJECT_MEMORY_FILE": "1"]

    /// Spools a notification of 200 KiB to the listeners of "big".
    private static func postLarge(in path: String) throws {
        let poster = try Peer("wormhole-test-peer", ["post", "--container", path, "--name", "big", "--payload", "200000"],
                              environment: noMemoryFile)
        _ = try poster.waitForExit()
    }

    @Test("a process stopped at each named point of the write and drain paths holds no lock and keeps nobody waiting",
          .timeLimit(.minutes(10)))
    func namedPoints() async throws {
        // Minutes of blocking waits: on a thread of their own, so that Swift's pool (two threads here) stays free
        // for the tests beside this one.
        try await onDispatchThread { try self.namedPointsRun() }
    }

    private func namedPointsRun() throws {
        for point in points {
            let container = TemporaryContainer()
            // A listener that must keep receiving while the other process is stopped.
            let bystander = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "p"])
            try bystander.waitForLines(1)
            let stopping = try Peer(point.executable, point.arguments(container.path),
                                    environment: point.environment.merging(["WORMHOLE_STOP_AT": point.name]) { $1 })
            // A listener passes the drain points on its own each second; a spooled notification gives it work there.
            try point.trigger(container.path)
            try stopping.waitUntilStopped(timeout: 20)
            #expect(try pidsHoldingLocks(under: container.path).isEmpty, "stopped at \(point.name)")
            let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "p", "--count", "20"])
            #expect(try poster.waitForExit() == 0, "posting while a process is stopped at \(point.name)")
            let arrived = try bystander.waitForLines(21).count - 1
            #expect(arrived >= 20, "stopped at \(point.name)")
            stopping.signal(SIGCONT)
            stopping.signal(SIGKILL)
            bystander.signal(SIGKILL)
        }
    }

    // MARK: Killed at a named point

    /// Starts `executable` so that it stops itself at `point`, waits until it has, and kills it there.
    private func killProcess(_ executable: String, _ arguments: [String], at point: String,
                             environment: [String: String] = [:]) async throws {
        let process = try Peer(executable, arguments, environment: environment.merging(["WORMHOLE_STOP_AT": point]) { $1 })
        try process.waitUntilStopped(timeout: 20)
        process.signal(SIGKILL)
        _ = try? await process.awaitExit()
    }

    @Test("a durable listener killed between keeping held frames and removing what it took loses nothing, and gets each once")
    func killedWhileKeeping() async throws {
        let container = TemporaryContainer()
        let path = container.path
        // Its last run observed x and y; while it is down, both are posted.
        let first = try Peer("wormhole-test-peer", ["listen", "--container", path, "--client", "w", "--name", "x", "--also", "y"])
        try await first.awaitLines(1)
        first.signal(SIGKILL)
        _ = try? await first.awaitExit()
        let center = try GroupNotificationCenter(containerURL: container.url)
        for i in 0..<50 {
            let report = try center.postReporting(name: .init(i % 2 == 0 ? "x" : "y"), object: nil, userInfo: ["i": i])
            #expect(report.spooled == 1)
        }
        // The next run keeps everything (nothing observes yet) and is killed before it removes what it took.
        try await killProcess("wormhole-test-peer", ["listen", "--container", path, "--client", "w", "--name", "x"], at: "spool.hold")
        let third = try Peer("wormhole-test-peer", ["listen", "--container", path, "--client", "w", "--name", "x", "--also", "y"])
        let lines = try await third.awaitLines(51)
        let numbers = third.jsonLines().compactMap { $0["i"] as? Int }
        #expect(lines.count == 51)
        #expect(numbers.sorted() == Array(0..<50), "each once")
        third.signal(SIGKILL)
    }

    @Test("a retained value's writer killed between writing and renaming leaves the old value whole")
    func killedWhileRetaining() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        try center.postReporting(name: .init("r"), object: "old", userInfo: ["v": 1], retain: true)
        try await killProcess("wormhole", ["post", "--container", container.path, "--name", "r", "--object", "new", "--retain"], at: "file.replace")
        let kept = try #require(center.retainedNotification(named: .init("r")))
        #expect(kept.object as? String == "old")
        #expect(kept.userInfo?["v"] as? Int == 1)
        try center.postReporting(name: .init("r"), object: "newer", userInfo: nil, retain: true)
        #expect(center.retainedNotification(named: .init("r"))?.object as? String == "newer")
    }

    @Test("a process killed right after claiming an identity leaves it claimable by the next")
    func killedWhileClaiming() async throws {
        let container = TemporaryContainer()
        try await killProcess("wormhole", ["listen", "--container", container.path, "--client", "w"], at: "identity.claim")
        let next = try Peer("wormhole", ["listen", "--container", container.path, "--client", "w"])
        try await next.awaitError(containing: "listening")
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.listenerStatus().contains { $0.clientIdentifier == "w" && $0.pid == next.pid })
        next.signal(SIGKILL)
    }

    @Test("a listener killed while writing its registry entry leaves entries that read whole, and posts go on")
    func killedWhileRegistering() async throws {
        let container = TemporaryContainer()
        let bystander = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "k"])
        try await bystander.awaitLines(1)
        try await killProcess("wormhole-test-peer", ["listen", "--container", container.path, "--name", "k"], at: "file.replace")
        let folder = container.path + "/registry/"
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where !name.hasPrefix(".") {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + name)))
            #expect(throws: Never.self) { _ = try RegistryFormat.decodeEntry(bytes) }
        }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "k", "--count", "3"])
        #expect(try await poster.awaitExit() == 0)
        #expect(try await bystander.awaitLines(4).count == 4)
        bystander.signal(SIGKILL)
    }

    @Test("a poster killed before naming its new segment: nothing of it arrives, later posts do, and its file waits unread")
    func killedBeforeNaming() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "a"])
        try await listener.awaitLines(1)
        try await killProcess("wormhole-test-peer", ["post", "--container", container.path, "--name", "a", "--payload", "200000"],
                        at: "spool.name", environment: Self.noMemoryFile)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "a", "--count", "5", "--start", "1"])
        #expect(try await poster.awaitExit() == 0)
        let numbers = try await Self.numbers(printedBy: listener) { $0.count >= 5 }
        #expect(numbers == Array(1...5), "the killed poster's record was never named, so never read")
        let files = FileManager.default.enumerator(atPath: container.path + "/spool")?.allObjects as? [String] ?? []
        #expect(files.filter { $0.hasSuffix(SpoolFolder.unnamedSuffix) }.count == 1, "its file is left for a minute: \(files)")
        listener.signal(SIGKILL)
    }

    @Test("a poster killed right after appending to a spool: the listener reads the spool whole, and later posts arrive")
    func killedWhileSpooling() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "a"])
        try await listener.awaitLines(1)
        try await killProcess("wormhole-test-peer", ["post", "--container", container.path, "--name", "a", "--payload", "200000"],
                        at: "spool.append", environment: Self.noMemoryFile)
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "a", "--count", "5", "--start", "1"])
        #expect(try await poster.awaitExit() == 0)
        // The killed poster's record was written whole before it stopped: it may arrive (it was posted); nothing else.
        let numbers = try await Self.numbers(printedBy: listener) { Set($0).isSuperset(of: Set(1...5)) }
        #expect(Set(numbers).isSuperset(of: Set(1...5)))
        #expect(Set(numbers).isSubset(of: Set(0...5)) && numbers.count == Set(numbers).count)
        listener.signal(SIGKILL)
    }

    /// The `"i"` of each notification `listener` has printed, read again as lines come until `enough` holds or
    /// 20 seconds pass.
    private static func numbers(printedBy listener: Peer, until enough: ([Int]) -> Bool) async throws -> [Int] {
        let deadline = Date().addingTimeInterval(20)
        var numbers: [Int] = []
        repeat {
            _ = try await listener.awaitLines(numbers.count + 2)
            numbers = listener.jsonLines().compactMap { $0["i"] as? Int }
        } while !enough(numbers) && Date() < deadline
        return numbers
    }
}
