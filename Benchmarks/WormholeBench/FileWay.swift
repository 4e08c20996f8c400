// MMWormhole's way, for comparison: each message is an NSKeyedArchiver archive written to a file in a shared
// folder (temporary file, then rename), and the reader, woken by inotify, reads and decodes it.
#if canImport(Glibc)
import Glibc
#endif
import Foundation

enum FileWay {
    static let classes: [AnyClass] = [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self]

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

    /// Blocks until files arrive; returns their names.
    static func names(from fd: Int32) -> [String] {
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

    /// The reader: answers `ping` with `pong`, counts `m-<total>-<i>` files and answers the last with `done`.
    static func peer(folder: String) -> Never {
        let fd = watch(folder)
        var received = 0
        FileWay.write(Data(), as: "ready", in: folder)
        while true {
            for name in names(from: fd) {
                let path = folder + "/" + name
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                _ = try? NSKeyedUnarchiver.unarchivedObject(ofClasses: classes, from: data)
                if name == "ping" {
                    write(data, as: "pong", in: folder)
                } else if name.hasPrefix("m-") {
                    unlink(path)
                    received += 1
                    let total = Int(name.split(separator: "-")[1]) ?? 0
                    if received == total {
                        received = 0
                        write(Data(), as: "done", in: folder)
                    }
                }
            }
        }
    }

    /// One-way latency samples (ns, sorted) and throughput (messages/s) against a running peer in `folder`.
    static func measure(folder: String, watcher fd: Int32, payload: [AnyHashable: Any], rounds: Int, count: Int)
        -> (latencies: [UInt64], rate: Double)
    {
        let archive = (try? NSKeyedArchiver.archivedData(
            withRootObject: NSDictionary(dictionary: payload), requiringSecureCoding: true)) ?? Data()
        var samples: [UInt64] = []
        for _ in 0..<rounds {
            let start = DispatchTime.now().uptimeNanoseconds
            write(archive, as: "ping", in: folder)
            while !names(from: fd).contains("pong") {}
            samples.append((DispatchTime.now().uptimeNanoseconds - start) / 2)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<count {
            let data = try? NSKeyedArchiver.archivedData(
                withRootObject: NSDictionary(dictionary: payload), requiringSecureCoding: true)
            write(data ?? archive, as: "m-\(count)-\(index)", in: folder)
        }
        while !names(from: fd).contains("done") {}
        let rate = Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        return (samples.sorted(), rate)
    }
}
