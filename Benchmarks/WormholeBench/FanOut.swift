// Fan-out, one poster to eight receiving processes, run in a child process of its own so that the poster's
// peak memory is measured apart from everything else the benchmark did.
import Foundation
import Wormhole

enum FanOut {
    /// Runs the fan-out of `mechanism` (on `transport`, for the raw socket and Wormhole) with payload number
    /// `payload` in a child; nil if it failed.
    static func run(mechanism: String, transport: Transport?, payload: Int, count: Int, folder: String, bus: String?) -> FanOutResult? {
        var arguments = ["fan-out", "--mechanism", mechanism, "--payload", String(payload), "--count", String(count), "--folder", folder]
        if let bus { arguments += ["--bus", bus] }
        if let transport { arguments += ["--transport", transport.rawValue] }
        let output = Pipe()
        guard let child = try? spawnSelf(arguments, output: output.fileHandleForWriting, transport: transport) else { return nil }
        try? output.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        let fields = text.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == 3, let rate = Double(fields[0]), let poster = Int(fields[1]), let sink = Int(fields[2]) else {
            return nil
        }
        return FanOutResult(rate: rate, posterKiB: poster, sinkKiB: sink)
    }

    /// The child: measures and prints "rate posterKiB sinkKiB", or nothing if it failed.
    static func child() throws -> Never {
        guard let mechanism = option("--mechanism"), let index = option("--payload").flatMap(Int.init),
            Payload.all.indices.contains(index), let count = option("--count").flatMap(Int.init),
            let folder = option("--folder"), !folder.isEmpty
        else { exit(2) }
        let payload = Payload.all[index]
        let transport = transportOption() ?? .sequencedPacket
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let result: FanOutResult?
        switch mechanism {
        case "raw": result = try RawSocket.fanOut(payload, count: count, folder: folder, transport: transport)
        case "wormhole": result = try WormholeWay.fanOut(payload, count: count, folder: folder, transport: transport)
        case "file": result = try FileWay.fanOut(payload, count: count, folder: folder)
        case "dbus": result = try option("--bus").flatMap { try DBusWay.fanOut(payload, count: count, address: $0) }
        default: result = nil
        }
        if let result { print(result.rate, result.posterKiB, result.sinkKiB) }
        exit(result == nil ? 1 : 0)
    }
}
