import Foundation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// The per-listener spool cap (``GroupNotificationCenter/Configuration/maximumSpoolSize``) holds when many posters
/// spool for one stopped listener at once: each poster reserves room with a lease file before it measures, so of
/// two posters admitted together at least one sees the other's lease. Leases of posters that died or were stopped
/// expire, and never block the others (``SpoolLeaseTests`` has the leases of gone posters, and planted ones).
@Suite("Spool cap: many posters at once, and leases that expire", .throttled)
struct SpoolCapTests {
    /// A cap small enough to show the problem quickly.
    static let cap = 32 << 20

    @Test("12 posters spooling 6 MB payloads at once for one stopped listener keep its spool within the cap")
    func concurrentPostersKeepTheCap() async throws {
        let container = TemporaryContainer("spoolcap")
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"])
        defer { release(listener) }
        try await listener.awaitLines(1)
        try listener.suspend()
        let folder = try spoolFolder(of: container)

        let arguments = [
            "post", "--container", container.path, "--name", "big", "--count", "3", "--payload", "6000000",
            "--spool-limit", "\(Self.cap)",
        ]
        let posters = try (0..<12).map { _ in try Peer("wormhole-test-peer", arguments) }
        var spooled = 0, failed = 0, spoolFull = 0, delivered = 0
        for poster in posters {
            #expect(try await poster.awaitExit(timeout: 120) == 0, "poster: \(poster.errorOutput.suffix(3))")
            let report = poster.jsonLines().first ?? [:]
            delivered += report["delivered"] as? Int ?? 0
            spooled += report["spooled"] as? Int ?? 0
            failed += report["failed"] as? Int ?? 0
            spoolFull += report["spoolFull"] as? Int ?? 0
        }
        let (segments, leases, leasesHoldingData) = spoolBytes(folder)
        print(
            "spool cap \(Self.cap): segments hold \(segments) bytes (\(String(format: "%.2f", Double(segments) / Double(Self.cap)))x), "
                + "leases claim \(leases); delivered \(delivered), spooled \(spooled), failed \(failed) (spoolFull \(spoolFull))")
        // No poster was stopped, so the leases leave no overshoot at all.
        #expect(segments <= Self.cap, "the spool holds \(segments) bytes, past its \(Self.cap)-byte cap")
        #expect(spooled > 0, "some posts were spooled")
        #expect(spoolFull > 0, "some posts were refused for the cap")
        #expect(failed == spoolFull, "every failure is the cap's")
        #expect(leasesHoldingData == 0, "lease files are sparse: only their header takes room")
    }

    @Test("a stale lease (old or in the future) never blocks a poster and is removed; a live poster's fresh one counts")
    func staleAndHostileLeases() async throws {
        let container = TemporaryContainer("spoollease")
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "big"])
        defer { release(listener) }
        try await listener.awaitLines(1)
        try listener.suspend()
        let folder = try spoolFolder(of: container)
        let arguments = [
            "post", "--container", container.path, "--name", "big", "--count", "4", "--payload", "6000000",
            "--spool-limit", "\(Self.cap)",
        ]

        // Leases claiming the whole cap, left by a poster killed 10 s ago and by a clock a minute ahead: both stale.
        let old = folder + SpoolFolder.leasePrefix + "00000000000000a1"
        let future = folder + SpoolFolder.leasePrefix + "00000000000000a2"
        try plantLease(old, holder: ProcessMark.current, claim: Self.cap, modified: Date().addingTimeInterval(-10))
        try plantLease(future, holder: nil, claim: Self.cap, modified: Date().addingTimeInterval(60))
        let first = try Peer("wormhole-test-peer", arguments)
        #expect(try await first.awaitExit(timeout: 180) == 0)
        let report = first.jsonLines().first ?? [:]
        #expect(report["spooled"] as? Int ?? 0 > 0, "stale leases blocked the poster: \(report)")
        #expect(report["failed"] as? Int == 0, "\(report)")
        #expect(!FileManager.default.fileExists(atPath: old), "a lease 10 s old is removed")
        #expect(!FileManager.default.fileExists(atPath: future), "a lease a minute in the future is removed")

        // A lease of a poster that lives (this process), kept fresh as a live poster would, reserving the whole cap:
        // every spool is refused while it stands.
        let live = folder + SpoolFolder.leasePrefix + "00000000000000a3"
        try plantLease(live, holder: ProcessMark.current, claim: Self.cap, modified: Date())
        let holderDone = Atomic<Bool>(false)
        let holder = Thread {
            while !holderDone.load(ordering: .acquiring) {
                utimes(live, nil)
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        holder.start()
        defer { holderDone.store(true, ordering: .releasing) }
        let second = try Peer("wormhole-test-peer", arguments)
        #expect(try await second.awaitExit(timeout: 180) == 0)
        let refused = second.jsonLines().first ?? [:]
        #expect(refused["spooled"] as? Int == 0, "\(refused)")
        #expect(refused["spoolFull"] as? Int ?? 0 > 0, "\(refused)")
        #expect(refused["dropped"] as? Int == 0, "a live poster's lease is no damage: \(refused)")
        #expect(FileManager.default.fileExists(atPath: live), "a fresh lease is left alone")
        let after = spoolBytes(folder)
        #expect(after.segments <= Self.cap)
        #expect(after.leasesHoldingData == 0, "lease files are sparse: only their header takes room")
    }
}

/// The path (with a trailing slash) of the spool folder of the one listener in `container`.
func spoolFolder(of container: TemporaryContainer) throws -> String {
    let names = try FileManager.default.contentsOfDirectory(atPath: container.path + "/spool")
    let listener = try #require(names.first { FileName.value(ofHex: $0) != nil }, "no spool folder in \(names)")
    return container.path + "/spool/" + listener + "/"
}

/// The bytes (st_size) of the regular files in a spool folder: its segments and other files, and apart the sizes
/// the lease files claim and how many of them hold more than one block (sparse: none, only their header).
private func spoolBytes(_ folder: String) -> (segments: Int, leases: Int, leasesHoldingData: Int) {
    var segments = 0, leases = 0, leasesHoldingData = 0
    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
        var info = stat()
        guard lstat(folder + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
        if name.hasPrefix(SpoolFolder.leasePrefix) {
            leases += Int(info.st_size)
            if Int(info.st_blocks) * 512 > max(4096, Int(info.st_blksize)) { leasesHoldingData += 1 }
        } else {
            segments += Int(info.st_size)
        }
    }
    return (segments, leases, leasesHoldingData)
}

/// A sparse file of `claim` bytes after a lease's header naming `holder` (without one, as an older Wormhole wrote
/// them: its whole size is the claim), last modified at `modified`.
func plantLease(_ path: String, holder: ProcessMark?, claim: Int, modified: Date) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    try #require(fd >= 0, "errno \(errno)")
    defer { close(fd) }
    var size = claim
    if let holder {
        let header = LeaseFormat.header(holder)
        try #require(header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == header.count)
        size += header.count
    }
    try #require(ftruncate(fd, off_t(size)) == 0, "the file system cannot hold a sparse \(size)-byte file: errno \(errno)")
    try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
}

/// Lets a stopped listener run again, then kills it.
private func release(_ listener: Peer) {
    listener.signal(SIGCONT)
    listener.signal(SIGKILL)
    // Killed, it exits at once: a wait that can run in a defer.
    _ = try? listener.waitForExit(timeout: 10)
}
