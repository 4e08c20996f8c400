// MMWormhole's way: each message is an NSKeyedArchiver archive written to a file in a shared folder
// (temporary file, then rename), and the reader, woken by inotify, reads it and decodes it with
// NSKeyedUnarchiver. Every message gets a file of its own, so none is overwritten before it is read.
#if canImport(Glibc)
import Glibc
#endif
import Foundation

final class FileWay: Mechanism {
    let name = "MMWormhole's way (file + rename + inotify)"
    /// About a hundred times slower than a socket; and Foundation's archiver is slow for large Data.
    let slowness = 10
    static let classes: [AnyClass] = [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self]
    private let folder: String
    private let watcher: Int32
    private let peer: Process
    private var sent = 0

    init(folder: String) throws {
        self.folder = folder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        watcher = Self.watch(folder)
        peer = try spawnSelf(["file-peer", "--folder", folder])
        guard Self.wait(for: "ready", on: watcher, seconds: 30) != nil else { throw BenchError("the file peer did not start") }
    }

    deinit {
        stopProcess(peer)
        close(watcher)
    }

    static func archive(_ payload: Payload) -> Data {
        (try? NSKeyedArchiver.archivedData(
            withRootObject: NSDictionary(dictionary: payload.userInfo ?? [:]), requiringSecureCoding: true)) ?? Data()
    }

    /// Writes `data` as `name` in `folder`, atomically.
    static func write(_ data: Data, as name: String, in folder: String) {
        let temporary = folder + "/.tmp-" + name
        _ = FileManager.default.createFile(atPath: temporary, contents: data)
        rename(temporary, folder + "/" + name)
    }

    /// An inotify descriptor watching `folder` for files renamed into it.
    static func watch(_ folder: String) -> Int32 {
        #if canImport(Glibc)
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        _ = inotify_add_watch(fd, folder, UInt32(IN_MOVED_TO))
        return fd
        #else
        return -1
        #endif
    }

    /// Blocks until files arrive, up to `seconds`; returns their names, or nil on timeout.
    static func names(from fd: Int32, seconds: Double = 3600) -> [String]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(seconds * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        var names: [String] = []
        var offset = 0
        while count > 0, offset + 16 <= count {
            let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8 | Int(buffer[offset + 14]) << 16
            let bytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
            names.append(String(decoding: bytes, as: UTF8.self))
            offset += 16 + length
        }
        return names
    }

    /// Waits for a file whose name starts with `prefix`; returns its name, or nil on timeout.
    static func wait(for prefix: String, on fd: Int32, seconds: Double) -> String? {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < deadline {
            guard let names = names(from: fd, seconds: seconds) else { return nil }
            if let name = names.first(where: { $0.hasPrefix(prefix) }) { return name }
        }
        return nil
    }

    func pingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        var samples: [UInt64] = []
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            Self.write(Self.archive(payload), as: "ping", in: folder)
            guard Self.wait(for: "pong", on: watcher, seconds: 10) != nil else { break }
            samples.append((monotonicNanoseconds() - start) / 2)
        }
        return samples
    }

    func stamped(_ payload: Payload, count: Int, interval: UInt64) -> Percentiles? {
        paced(count, every: interval) {
            sent += 1
            Self.write(Self.archive(payload), as: "s-\(count)-\(monotonicNanoseconds())-\(sent)", in: folder)
        }
        guard Self.wait(for: "stamped", on: watcher, seconds: 120) != nil,
            let data = FileManager.default.contents(atPath: folder + "/stamped")
        else { return nil }
        return Percentiles(bytes: [UInt8](data), count: count)
    }

    func flood(_ payload: Payload, count: Int) -> Double? {
        let start = monotonicNanoseconds()
        for _ in 0..<count {
            sent += 1
            Self.write(Self.archive(payload), as: "m-\(count)-\(sent)", in: folder)
        }
        guard Self.wait(for: "done", on: watcher, seconds: 300) != nil else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    // MARK: The other side

    /// The reader: answers `ping` with `pong`; collects `s-<total>-<stamp>-<n>` stamps and answers with
    /// `stamped`; counts `m-<total>-<n>` (deleting them) and answers `done`; as a fan-out sink, counts
    /// `f-<total>-<n>` (leaving them for the other sinks) and answers `fanned-<pid>` with its peak memory.
    static func peer(folder: String) -> Never {
        let fd = watch(folder)
        var received = 0
        var collector = StampCollector()
        write(Data(), as: "ready-\(getpid())", in: folder)
        while let names = names(from: fd) {
            for name in names {
                let fields = name.split(separator: "-")
                guard let kind = fields.first, ["ping", "s", "m", "f"].contains(kind) else { continue }
                let path = folder + "/" + name
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                _ = try? NSKeyedUnarchiver.unarchivedObject(ofClasses: classes, from: data)
                let total = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
                switch kind {
                case "ping":
                    write(data, as: "pong", in: folder)
                case "s":
                    if fields.count > 2, let stamp = UInt64(fields[2]), let result = collector.add(stamp: stamp, total: total) {
                        write(Data(result.bytes), as: "stamped", in: folder)
                    }
                    unlink(path)
                default:
                    if kind == "m" { unlink(path) }
                    received += 1
                    if received == total {
                        received = 0
                        if kind == "m" {
                            write(Data(), as: "done", in: folder)
                        } else {
                            write(Data(littleEndianBytes(UInt64(peakResidentKiB()))), as: "fanned-\(getpid())", in: folder)
                        }
                    }
                }
            }
        }
        exit(0)
    }

    /// In a fan-out child: eight readers watch one folder; each reads every file.
    static func fanOut(_ payload: Payload, count: Int, folder: String) throws -> FanOutResult? {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let watcher = watch(folder)
        defer { close(watcher) }
        let sinks = try (0..<8).map { _ in try spawnSelf(["file-peer", "--folder", folder]) }
        defer { sinks.forEach(stopProcess) }
        var ready = 0
        while ready < 8 {
            guard let names = names(from: watcher, seconds: 30) else { return nil }
            ready += names.filter { $0.hasPrefix("ready-") }.count
        }
        let start = monotonicNanoseconds()
        for index in 0..<count { write(archive(payload), as: "f-\(count)-\(index)", in: folder) }
        var fanned: [String] = []
        while fanned.count < 8 {
            guard let names = names(from: watcher, seconds: 300) else { return nil }
            fanned += names.filter { $0.hasPrefix("fanned-") }
        }
        let rate = Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
        let largest = fanned.compactMap { FileManager.default.contents(atPath: folder + "/" + $0) }
            .map { Int(littleEndianValue([UInt8]($0))) }.max() ?? 0
        return FanOutResult(rate: rate, posterKiB: peakResidentKiB(), sinkKiB: largest)
    }
}
