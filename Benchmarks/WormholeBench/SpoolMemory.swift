// What a large post costs in memory on the paths Apple platforms take, where there is no memory file and a
// frame over 128 KiB goes through the listener's spool: each side's peak resident memory above what it held
// just before (the poster's own userInfo, made before, is not counted; the listener's delivered `Data` is).
// Both sides run as processes of their own with WORMHOLE_APPLE_PATHS=1, over datagrams, as on Apple platforms.
import Foundation
import Wormhole

enum SpoolMemory {
    /// 1 MiB, and the largest `Data` whose archive fits the payload limit.
    static let sizes = [1 << 20, GroupNotificationCenter.maximumPayloadSize - (64 << 10)]

    /// Each size, with the poster's and the listener's growth in multiples of it.
    static func measure(folder: String) throws -> [(size: Int, poster: Double, listener: Double)] {
        try sizes.enumerated().map { index, size in
            let container = folder + "/spool-memory-\(index)"
            let listenerOutput = Pipe(), posterOutput = Pipe()
            let listener = try start(["spool-listener", "--container", container, "--size", "\(size)"], listenerOutput)
            defer { stopProcess(listener) }
            guard let ready = readLine(listenerOutput), ready == "ready" else { throw BenchError("spool listener did not start") }
            let poster = try start(["spool-poster", "--container", container, "--size", "\(size)"], posterOutput)
            defer { stopProcess(poster) }
            guard let posted = readLine(posterOutput).flatMap(Int.init), let received = readLine(listenerOutput).flatMap(Int.init)
            else { throw BenchError("spool memory: a side reported nothing") }
            return (size, Double(posted) * 1024 / Double(size), Double(received) * 1024 / Double(size))
        }
    }

    /// The listener's side: says "ready", then on the one notification its growth in KiB, and exits.
    static func listen(container: String, size: Int) throws -> Never {
        lineBufferedOutput()
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container), clientIdentifier: nil, configuration: .init(transport: .datagram))
        let baseline = Box()
        center.addObserver(forName: .init("large"), object: nil, queue: nil) { note in
            let count = (note.userInfo?["data"] as? Data)?.count ?? 0
            print(count == size ? "\(peakResidentKiB() - baseline.kib)" : "0")
            exit(0)
        }
        baseline.kib = residentKiB()
        print("ready")
        while true { sleep(60) }
    }

    /// The poster's side: makes its userInfo, then posts it once and says its growth in KiB.
    static func post(container: String, size: Int) throws -> Never {
        lineBufferedOutput()
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container), clientIdentifier: nil, configuration: .init(transport: .datagram))
        let data = Data((0..<size).lazy.map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let baseline = residentKiB()
        let report = try center.postReporting(name: Notification.Name("large"), object: nil as String?, userInfo: ["data": data])
        guard report.spooled == 1 else { throw BenchError("the large post was not spooled: \(report)") }
        print("\(peakResidentKiB() - baseline)")
        withExtendedLifetime(data) {}
        exit(0)
    }

    private final class Box: @unchecked Sendable { var kib = 0 }

    private static func start(_ arguments: [String], _ output: Pipe) throws -> Process {
        let process = Process()
        process.executableURL = Bundle.main.executableURL
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["WORMHOLE_APPLE_PATHS"] = "1"
        process.environment = environment
        process.standardOutput = output
        try process.run()
        return process
    }

    private static func readLine(_ pipe: Pipe) -> String? {
        var line = [UInt8]()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(first)
        }
    }

    /// This process's resident memory now, in KiB (Linux: /proc/self/statm).
    private static func residentKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
}
