import Foundation
import Synchronization
import Wormhole

/// The processes the harness starts: posters post numbered notifications, receivers report what they get.
enum Roles {
    static let name = Notification.Name("chaos")

    /// The checksum a notification carries of its own poster, sequence and data.
    static func checksum(poster: Int, sequence: Int, data: Data) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        // By bit pattern: a notification of another process on this name has no poster or sequence (-1 each).
        for value in [UInt64(truncatingIfNeeded: poster), UInt64(truncatingIfNeeded: sequence)] { hash = (hash ^ value) &* 0x100_0000_01b3 }
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(truncatingIfNeeded: hash >> 1)
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Posts sequence numbers `first..<end`, printing `P <seq> <start ns> <end ns>` after each returns.
    /// With `rate` above zero, it posts at most that many notifications a second.
    static func poster(container: String, id: Int, first: Int, end: Int, rate: Int) throws -> Never {
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        var generator = SystemRandomNumberGenerator()
        let began = now()
        for sequence in first..<end {
            if rate > 0 {
                let due = began + UInt64(sequence - first) * 1_000_000_000 / UInt64(rate)
                let current = now()
                if due > current { usleep(UInt32(min((due - current) / 1000, 1_000_000))) }
            }
            // One post in 256 is larger than a socket takes whole (128 KiB): a running receiver gets it as a shared
            // memory file, a stopped one through its spool.
            let data = Int.random(in: 0..<256, using: &generator) == 0
                ? Data((0..<Int.random(in: 150_000...400_000, using: &generator)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ sequence) })
                : Data((0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let start = now()
            let userInfo: [AnyHashable: Any] = [
                "p": id, "s": sequence, "data": data, "sum": checksum(poster: id, sequence: sequence, data: data),
            ]
            let report = try center.postReporting(name: name, object: "p\(id)", userInfo: userInfo)
            line("P \(sequence) \(start) \(now()) \(report.failures.count)")
            if !report.failures.isEmpty { line("F \(sequence) \(report.failures.map(\.description).joined(separator: "; "))") }
        }
        line("DONE")
        exit(0)
    }

    /// Observes every chaos notification; prints `R <poster> <seq> <ok>` for each, and churns other observers.
    /// With `forgetEvery` above zero, it leaves out every so many notifications from its report, so that the
    /// harness's own test can check that it notices.
    static func receiver(container: String, forgetEvery: Int) throws -> Never {
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        let seen = Atomic<Int>(0)
        center.addObserver(forName: name, object: nil, queue: nil) { note in
            let count = seen.add(1, ordering: .relaxed).newValue
            if forgetEvery > 0 && count % forgetEvery == 0 { return }
            let info = note.userInfo ?? [:]
            let poster = info["p"] as? Int ?? -1
            let sequence = info["s"] as? Int ?? -1
            let data = info["data"] as? Data ?? Data()
            let intact = info["sum"] as? Int == checksum(poster: poster, sequence: sequence, data: data)
                && note.object as? String == "p\(poster)"
            line("R \(poster) \(sequence) \(intact ? 1 : 0)")
        }
        line("READY \(now())")
        // Observers come and go on other names while posts are in flight, rewriting the registry.
        var generator = SystemRandomNumberGenerator()
        while true {
            let token = center.addObserver(forName: .init("churn.\(Int.random(in: 0..<8, using: &generator))"), object: nil, queue: nil) { _ in }
            usleep(UInt32.random(in: 2_000...20_000, using: &generator))
            center.removeObserver(token)
        }
    }

    /// Writes one whole line to standard output.
    static func line(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress.map { $0 + done }, bytes.count - done) }
            if n <= 0 { return }
            done += n
        }
    }
}
