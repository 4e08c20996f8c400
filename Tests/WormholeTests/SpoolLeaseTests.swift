import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// Leases describe what is reserved now: a poster's lease gives back what it wrote once the record is in its
/// segment, stops counting once its poster is gone, and a file under a lease's name that is not a lease a poster
/// of this format wrote (a folder, a FIFO, a symbolic link, a file without a lease's header, one claiming more
/// than the cap) is skipped and counted, never a reason to refuse a post.
@Suite("Spool leases: what is reserved now, and planted ones", .throttled)
struct SpoolLeaseTests {
    /// The paths Apple platforms take: no memory files, so a large post goes through the spool.
    static let applePaths = ["WORMHOLE_APPLE_PATHS": "1"]
    static let payload = 15_000_000

    @Test("ten 15 MB posts through the spool, one live process each, to a listener that keeps up all arrive")
    func tenLargePostsToALiveListener() async throws {
        let container = TemporaryContainer("leasesten")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { listener.signal(SIGKILL) }
        try await listener.awaitLines(1)
        // Each poster has its payload built and waits for a signal: the posts then follow each other as fast as
        // the listener takes them, well within the 5 s a lease counts for. Each poster stays alive after its post,
        // so its lease counts for what it still claims.
        let posters = try (0..<10).map { i in
            try Peer(
                "wormhole-test-peer",
                ["post", "--container", container.path, "--name", "big", "--start", "\(i)", "--payload", "\(Self.payload)",
                    "--on-signal", "--stay"],
                environment: Self.applePaths)
        }
        defer { for poster in posters { poster.signal(SIGKILL) } }
        for poster in posters { try await poster.awaitLines(1, timeout: 60) }
        // Their leases kept fresh, as live posters' are: what they claim counts however long the posts take.
        let folder = try spoolFolder(of: container)
        let done = Atomic<Bool>(false)
        let toucher = Thread {
            while !done.load(ordering: .acquiring) {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                where name.hasPrefix(SpoolFolder.leasePrefix) {
                    utimes(folder + name, nil)
                }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        toucher.start()
        defer { done.store(true, ordering: .releasing) }
        var arrived = 0
        for (i, poster) in posters.enumerated() {
            poster.signal(SIGUSR1)
            try await poster.awaitLines(2, timeout: 60)
            let report = poster.jsonLines().last ?? [:]
            #expect(report["spooled"] as? Int == 1, "post \(i): \(report) \(poster.errorOutput.suffix(3))")
            #expect(report["failed"] as? Int == 0, "post \(i): \(report)")
            // The listener keeps up: each post is in before the next one starts.
            if report["spooled"] as? Int == 1 { arrived += 1 }
            try await listener.awaitLines(arrived + 1, timeout: 60)
        }
        let received = listener.jsonLines().compactMap { $0["blobBytes"] as? Int }
        #expect(received == Array(repeating: Self.payload, count: 10))
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == Array(0..<10))
    }

    @Test("planted leases of every kind, kept fresh, never fail a post; the damaged ones are counted once each")
    func plantedLeasesNeverFailAPost() async throws {
        let cap = 32 << 20
        let container = TemporaryContainer("leasesplanted")
        let elsewhere = TemporaryContainer("leasestarget")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { stop(listener) }
        try await listener.awaitLines(1)
        // Stopped: its spool keeps what is posted, and every post goes through it.
        try listener.suspend()
        let folder = try spoolFolder(of: container)
        func lease(_ n: Int) -> String { folder + SpoolFolder.leasePrefix + FileName.hex(UInt64(0xb0 + n)) }
        let me = ProcessMark.current
        try #require(me.start != 0, "this system tells a process's start")
        // A process that was, and is gone (reaped).
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()

        // Each would refuse every post if it counted: each claims the whole cap, or more.
        try FileManager.default.createDirectory(atPath: lease(1), withIntermediateDirectories: false)
        try #require(FileManager.default.createFile(atPath: lease(1) + "/inside", contents: Data([1])))
        try #require(mkfifo(lease(2), 0o600) == 0)
        // A lease of a live process (this one), kept elsewhere: a symbolic link to it, and a second name of it.
        let target = elsewhere.path + "/lease"
        try plantLease(target, holder: me, claim: cap, modified: Date())
        try #require(symlink(target, lease(3)) == 0)
        try #require(link(target, lease(4)) == 0)
        try plantLease(lease(5), holder: me, claim: 1 << 40, modified: Date())
        // Without a header: an older Wormhole's lease, or a forged one; and one cut short inside its header.
        try plantLease(lease(6), holder: nil, claim: cap, modified: Date())
        try #require(FileManager.default.createFile(atPath: lease(7), contents: Data(LeaseFormat.header(me).prefix(10))))
        // Naming a process that is gone, and this process with another start (its pid taken by a new process).
        let gone = ProcessMark(pid: ended.processIdentifier, start: 0, namespace: me.namespace)
        try plantLease(lease(8), holder: gone, claim: cap, modified: Date())
        let reused = ProcessMark(pid: me.pid, start: me.start &+ 1, namespace: me.namespace)
        try plantLease(lease(9), holder: reused, claim: cap, modified: Date())
        // Naming no process: pid -1 (which kill(2) would take for every process).
        let nobody = ProcessMark(pid: -1, start: 0, namespace: me.namespace)
        try plantLease(lease(10), holder: nobody, claim: cap, modified: Date())
        let fresh = [target, lease(5), lease(6), lease(7), lease(8), lease(9), lease(10)]
        let done = Atomic<Bool>(false)
        let toucher = Thread {
            while !done.load(ordering: .acquiring) {
                for path in fresh { utimes(path, nil) }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        toucher.start()
        defer { done.store(true, ordering: .releasing) }

        let poster = try Peer(
            "wormhole-test-peer",
            [
                "post", "--container", container.path, "--name", "big", "--count", "2", "--payload", "6000000",
                "--spool-limit", "\(cap)",
            ],
            environment: Self.applePaths)
        #expect(try await poster.awaitExit(timeout: 120) == 0, "\(poster.errorOutput.suffix(3))")
        let report = poster.jsonLines().first ?? [:]
        #expect(report["spooled"] as? Int == 2, "\(report) \(poster.errorOutput.suffix(5))")
        #expect(report["failed"] as? Int == 0, "\(report)")
        // The folder, the FIFO, the link, the second name, the claim past the cap, no header, cut short, no process:
        // each once, though both posts measured the folder.
        #expect(report["dropped"] as? Int == 8, "\(report) \(poster.errorOutput)")
        #expect(poster.errorOutput.filter { $0.contains("reserves nothing") }.count == 8, "\(poster.errorOutput)")
        // The leases of gone processes are removed; what is not a lease is left as it is.
        #expect(!FileManager.default.fileExists(atPath: lease(8)), "the lease of a gone process is removed")
        #expect(!FileManager.default.fileExists(atPath: lease(9)), "the lease of a pid now another process's is removed")
        #expect(FileManager.default.fileExists(atPath: lease(1) + "/inside"))
        #expect((try? FileManager.default.attributesOfItem(atPath: target)[.size] as? Int) == LeaseFormat.headerSize + cap)
    }

    @Test("a file planted under a poster's own lease name never fails its posts, and a linked file is not cut")
    func plantedUnderTheOwnName() async throws {
        // A folder with a file in it, which cannot be removed: the poster spools unreserved, and says so once.
        let blocked = TemporaryContainer("leasesown")
        try await postPlanted(in: blocked) { path in
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try #require(FileManager.default.createFile(atPath: path + "/inside", contents: Data([1])))
        } check: { center, path in
            #expect(center.statistics.dropped == 1)
            #expect(FileManager.default.fileExists(atPath: path + "/inside"))
        }
        // A second name of a file elsewhere: the name is removed and the lease made anew, the file left whole.
        let linked = TemporaryContainer("leaseslinked")
        let elsewhere = TemporaryContainer("leasesprecious")
        let precious = elsewhere.path + "/precious"
        let contents = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) })
        try #require(FileManager.default.createFile(atPath: precious, contents: contents))
        try await postPlanted(in: linked) { path in
            try #require(link(precious, path) == 0)
        } check: { center, path in
            #expect(center.statistics.dropped == 0)
            #expect(FileManager.default.contents(atPath: precious) == contents, "the linked file is not cut")
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_nlink == 1, "the poster's own lease, of one link")
        }
    }

    /// Plants something with `plant` under the lease name of this process's poster in a stopped listener's spool,
    /// posts until its posts go to the spool and three more after, all of which must succeed, then runs `check`.
    private func postPlanted(
        in container: TemporaryContainer, plant: (String) throws -> Void,
        check: (GroupNotificationCenter, String) throws -> Void
    ) async throws {
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "own"])
        defer { stop(listener) }
        try await listener.awaitLines(1)
        try listener.suspend()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let path = try spoolFolder(of: container) + SpoolLease.name(poster: center.endpoint.poster)
        try plant(path)
        // Frames sent whole until the stopped listener's socket is full; then spooled.
        let userInfo: [AnyHashable: Any] = ["blob": Data(count: 100_000)]
        var spooled = 0, failed = 0, posts = 0
        while spooled < 4 && posts < 500 {
            let report = try center.postReporting(name: Notification.Name("own"), object: nil, userInfo: userInfo)
            spooled += report.spooled
            failed += report.failures.count
            posts += 1
        }
        #expect(spooled == 4, "posts went to the spool")
        #expect(failed == 0, "no post failed")
        try check(center, path)
    }

    @Test("the lease of a poster that died counts nothing, however fresh another process keeps it")
    func deadPostersLeaseStopsCounting() async throws {
        let cap = 40_000_000
        let container = TemporaryContainer("leasesdead")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { stop(listener) }
        try await listener.awaitLines(1)
        let folder = try spoolFolder(of: container)
        let arguments = [
            "post", "--container", container.path, "--name", "big", "--payload", "\(Self.payload)", "--spool-limit", "\(cap)",
        ]
        // Stops itself with its record written and its lease still claiming it, before the segment is named.
        let stopped = try Peer(
            "wormhole-test-peer", arguments + ["--start", "0"],
            environment: Self.applePaths.merging(["WORMHOLE_STOP_AT": "spool.name"]) { $1 })
        defer { stopped.signal(SIGKILL) }
        try stopped.waitUntilStopped(timeout: 60)
        let leases = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasPrefix(SpoolFolder.leasePrefix) }
        try #require(leases.count == 1, "\(leases)")
        let lease = folder + leases[0]
        let done = Atomic<Bool>(false)
        let toucher = Thread {
            while !done.load(ordering: .acquiring) {
                utimes(lease, nil)
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        toucher.start()
        defer { done.store(true, ordering: .releasing) }

        // While its poster lives (stopped), the lease counts: 15 MB written and 15 MB leased leave no room for 15 MB.
        let refused = try Peer("wormhole-test-peer", arguments + ["--start", "1"], environment: Self.applePaths)
        #expect(try await refused.awaitExit(timeout: 60) == 0)
        let refusal = refused.jsonLines().first ?? [:]
        #expect(refusal["spoolFull"] as? Int == 1, "\(refusal) \(refused.errorOutput)")

        stopped.signal(SIGKILL)
        _ = try await stopped.awaitExit(timeout: 20)
        let admitted = try Peer("wormhole-test-peer", arguments + ["--start", "2"], environment: Self.applePaths)
        #expect(try await admitted.awaitExit(timeout: 60) == 0)
        let report = admitted.jsonLines().first ?? [:]
        #expect(report["spooled"] as? Int == 1, "\(report) \(admitted.errorOutput)")
        #expect(report["failed"] as? Int == 0, "\(report)")
        #expect(!FileManager.default.fileExists(atPath: lease), "the lease of a dead poster is removed")
        let lines = try await listener.awaitLines(2, timeout: 60)
        #expect(lines.count == 2 && lines[1].contains("\"i\":2"), "\(lines)")
    }
}

extension SpoolLeaseTests {
    @Test("a poster out of descriptors keeps the cap: what it cannot measure it does not spool, and says why")
    func posterOutOfDescriptorsKeepsTheCap() async throws {
        let cap = 8_000_000
        let container = TemporaryContainer("leasesfds")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { stop(listener) }
        try await listener.awaitLines(1)
        // Stopped: every 1 MB post goes to its spool, which takes eight at most.
        try listener.suspend()
        // Two posts open the spool, its segment and the lease; then the poster takes every descriptor left, and
        // its 28 other posts find it can no longer list the folder it measures.
        let poster = try Peer(
            "wormhole-test-peer",
            [
                "post", "--container", container.path, "--name", "big", "--count", "30", "--payload", "1000000",
                "--spool-limit", "\(cap)", "--exhaust-after", "2",
            ],
            environment: Self.applePaths)
        #expect(try await poster.awaitExit(timeout: 120) == 0, "\(poster.errorOutput.suffix(3))")
        let exhausted = try #require(poster.jsonLines().first { $0["exhausted"] != nil }, "\(poster.jsonLines())")
        try #require(exhausted["errno"] as? Int == Int(EMFILE), "the poster is out of descriptors: \(exhausted)")
        let report = poster.jsonLines().last ?? [:]
        let spooled = report["spooled"] as? Int ?? -1
        #expect(spooled >= 2 && spooled <= 8, "\(report)")
        #expect(report["failed"] as? Int == 30 - spooled, "\(report)")
        // Refused as this process's failure, not as a full spool: the spool holds 2 MB of its 8.
        #expect(report["spoolFull"] as? Int == 0, "\(report)")
        #expect(poster.errorOutput.contains { $0.contains("errno 24") }, "\(poster.errorOutput.suffix(3))")
        var segments = 0
        let folder = try spoolFolder(of: container)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) where name.hasSuffix(".seg") {
            segments += (try FileManager.default.attributesOfItem(atPath: folder + name)[.size] as? Int) ?? 0
        }
        #expect(segments <= cap, "the spool holds \(segments) bytes, past its \(cap)-byte cap")
    }
}

extension SpoolLeaseTests {
    @Test("more planted leases than a poster remembers are said once each up to that many, not at every renewal")
    func manyPlantedLeasesAreSaidOnce() async throws {
        let container = TemporaryContainer("leasesmany")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { stop(listener) }
        try await listener.awaitLines(1)
        try listener.suspend()
        // FIFOs: not regular files, so never taken for stale leases and removed; each is damage.
        let folder = try spoolFolder(of: container)
        let planted = Limits.rememberedDamagedLeases + 76
        for i in 0..<planted {
            try #require(mkfifo(folder + SpoolFolder.leasePrefix + FileName.hex(UInt64(0x1000 + i)), 0o600) == 0)
        }
        // Forty 1 MB posts renew the lease a dozen times, each looking at every planted file.
        let poster = try Peer(
            "wormhole-test-peer",
            ["post", "--container", container.path, "--name", "big", "--count", "40", "--payload", "1000000"],
            environment: Self.applePaths)
        #expect(try await poster.awaitExit(timeout: 120) == 0, "\(poster.errorOutput.suffix(3))")
        let report = poster.jsonLines().last ?? [:]
        #expect(report["spooled"] as? Int == 40, "\(report)")
        #expect(report["dropped"] as? Int == Limits.rememberedDamagedLeases, "\(report)")
        let said = poster.errorOutput.count { $0.contains("reserves nothing") }
        #expect(said == Limits.rememberedDamagedLeases, "said \(said) times for \(planted) files")
    }
}

extension SpoolLeaseTests {
    @Test("the lease of a process whose main thread exited while its other threads run counts: the process lives")
    func mainThreadExitedPosterCounts() async throws {
        let cap = 8_000_000
        let container = TemporaryContainer("leasesmain")
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"], environment: Self.applePaths)
        defer { stop(listener) }
        try await listener.awaitLines(1)
        try listener.suspend()
        // Linux shows such a process as a zombie in /proc/<pid>/stat, with more than one thread.
        let holder = try Peer("wormhole-test-peer", ["main-thread-exits", "--container", container.path])
        defer { holder.signal(SIGKILL) }
        let ready = try #require(try await holder.awaitLines(1).first)
        // Its main thread exits just after it says it is ready: seen once /proc says zombie.
        let deadline = Date().addingTimeInterval(10)
        func state() -> String? {
            let stat = (try? String(contentsOfFile: "/proc/\(holder.pid)/stat", encoding: .utf8)) ?? ""
            return stat.lastIndex(of: ")").flatMap { stat[$0...].dropFirst(2).first }.map(String.init)
        }
        while state() != "Z" && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try #require(state() == "Z", "its main thread exited: \(state() ?? "no state")")
        let me = ProcessMark.current
        let start = try #require(Sys.processStart(holder.pid))
        let mark = ProcessMark(pid: holder.pid, start: start, namespace: me.namespace)
        #expect(kill(holder.pid, 0) == 0, "it lives: \(ready)")
        let lease = try spoolFolder(of: container) + SpoolFolder.leasePrefix + "00000000000000c1"
        try plantLease(lease, holder: mark, claim: cap, modified: Date())
        let poster = try Peer(
            "wormhole-test-peer",
            ["post", "--container", container.path, "--name", "big", "--payload", "1000000", "--spool-limit", "\(cap)"],
            environment: Self.applePaths)
        #expect(try await poster.awaitExit(timeout: 60) == 0, "\(poster.errorOutput.suffix(3))")
        let report = poster.jsonLines().last ?? [:]
        #expect(report["spoolFull"] as? Int == 1, "its lease counts: \(report)")
        #expect(FileManager.default.fileExists(atPath: lease), "the lease of a live process is not removed")
    }
}

/// Lets a stopped listener run again, then kills it.
private func stop(_ listener: Peer) {
    listener.signal(SIGCONT)
    listener.signal(SIGKILL)
    // Killed, it exits at once: a wait that can run in a defer.
    _ = try? listener.waitForExit(timeout: 10)
}
