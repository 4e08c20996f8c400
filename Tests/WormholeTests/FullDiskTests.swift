import Foundation
import Testing
@testable import Wormhole

/// A file system of its own, 2 MiB of memory (tmpfs), filled to the last byte: what a full disk does. Mounting
/// needs root (CAP_SYS_ADMIN), which this suite's machines have; where the mount is refused, the test says so and
/// checks nothing.
@Suite("A full disk", .throttled)
struct FullDiskTests {
    @Test("a durable listener opens on a full disk, drains the spool that filled it, and registers once it can")
    func durableListenerDrainsAFullDisk() async throws {
        guard let disk = try SmallDisk() else { return }
        defer { disk.unmount() }
        let container = disk.path + "/c"
        let register = try Peer("wormhole", ["listen", "--container", container, "--create", "--client", "d", "--name", "n"])
        try await register.awaitError(containing: "listening")
        register.signal(SIGKILL)
        _ = try? await register.awaitExit()

        let poster = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        let filler = String(repeating: "x", count: 50_000)
        var spooled = 0
        for i in 0..<100 {
            guard let report = try? poster.postReporting(name: .init("n"), object: nil, userInfo: ["i": i, "s": filler]),
                report.spooled == 1
            else { break }
            spooled += 1
        }
        #expect(spooled > 5, "the spool took some before the disk filled: \(spooled)")
        disk.fill()
        #expect(disk.freeBytes == 0)

        let listener = try Peer("wormhole", ["listen", "--container", container, "--client", "d", "--name", "n"])
        try await listener.awaitLines(spooled)
        // Its entry names this run once the drain freed space (the listener mends it once a second).
        try await pollUntil("the listener registered") {
            poster.listenerStatus().first { $0.clientIdentifier == "d" }?.pid == listener.pid
        }
        listener.signal(SIGTERM)
        #expect(try await listener.awaitExit() == 0, "\(listener.errorOutput.prefix(3))")
        let numbers = listener.output.compactMap { line -> Int? in
            guard let data = line.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                return nil
            }
            return (object["userInfo"] as? [String: Any])?["i"] as? Int
        }
        #expect(numbers == Array(0..<spooled), "every spooled one, in order")
        #expect(disk.freeBytes > 0, "draining the spool freed space")
    }
}

/// A tmpfs of 2 MiB mounted on a new folder; nil where this process may not mount one.
final class SmallDisk {
    let path: String

    init?() throws {
        path = NSTemporaryDirectory() + "wormhole-disk-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        guard getuid() == 0, Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", path]) else {
            try? FileManager.default.removeItem(atPath: path)
            print("FullDiskTests: not checked: this machine does not let the test mount a small file system (needs root)")
            return nil
        }
    }

    var freeBytes: Int {
        var status = statvfs()
        guard statvfs(path, &status) == 0 else { return -1 }
        return Int(status.f_bavail) * Int(status.f_frsize)
    }

    /// Writes a file until the file system refuses more.
    func fill() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 0, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        // The last bytes, one at a time.
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) > 0 {}
    }

    func unmount() {
        _ = Self.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
