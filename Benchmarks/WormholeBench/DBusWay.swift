// D-Bus signals through a private dbus-daemon, started on a socket in the benchmark's temporary folder (never
// the system or session bus). Each side uses libdbus; a signal carries the same bytes as the raw socket's.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

final class DBusWay: Mechanism {
    let name = "D-Bus signal (dbus-daemon)"
    let slowness = 1
    let address: String
    private let daemon: Process
    private let peer: Process
    private let bus: DBusConnection

    /// Why D-Bus cannot be measured here, or nil when it can.
    static var unavailableReason: String? {
        guard executable("dbus-daemon") != nil else { return "skipped: dbus-daemon not found" }
        return DBusConnection.isAvailable ? nil : "skipped: libdbus-1.so.3 not found"
    }

    private static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    init(folder: String) throws {
        guard let executable = Self.executable("dbus-daemon") else { throw BenchError("dbus-daemon not found") }
        let configuration = folder + "/bus.conf"
        // Limits raised so that a flood is queued, not dropped, by the daemon.
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(folder)/bus.socket</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
              <limit name="max_incoming_bytes">4000000000</limit>
              <limit name="max_outgoing_bytes">4000000000</limit>
              <limit name="max_message_size">67108864</limit>
              <limit name="max_connections_per_user">1000</limit>
            </busconfig>
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let output = Pipe()
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: executable)
        daemon.arguments = ["--config-file=\(configuration)", "--nofork", "--print-address=1"]
        daemon.standardOutput = output
        try daemon.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        address = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty, let bus = DBusConnection(address: address, members: ["Pong", "Stamped", "Flooded", "Ready"]) else {
            stopProcess(daemon)
            throw BenchError("dbus-daemon did not start")
        }
        self.bus = bus
        peer = try spawnSelf(["dbus-peer", "--bus", address])
        guard wait(for: "Ready", seconds: 30) != nil else {
            stopProcess(peer)
            stopProcess(daemon)
            throw BenchError("the D-Bus peer did not start")
        }
    }

    deinit { stop() }

    /// Ends the peer and the daemon.
    func stop() {
        stopProcess(peer)
        stopProcess(daemon)
    }

    /// The next signal named `member`, skipping others; nil on timeout.
    private func wait(for member: String, seconds: Double) -> DBusConnection.Signal? {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        while monotonicNanoseconds() < deadline {
            guard let signal = bus.next(seconds: seconds) else { return nil }
            if signal.member == member { return signal }
        }
        return nil
    }

    func pingPong(_ payload: Payload, rounds: Int) -> [UInt64] {
        var samples: [UInt64] = []
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            bus.emit("Ping", total: 0, stamp: 0, bytes: payload.bytes)
            guard wait(for: "Pong", seconds: 10) != nil else { break }
            samples.append((monotonicNanoseconds() - start) / 2)
        }
        return samples
    }

    func stamped(_ payload: Payload, count: Int, interval: UInt64) -> Percentiles? {
        paced(count, every: interval) {
            bus.emit("Stamp", total: UInt32(count), stamp: monotonicNanoseconds(), bytes: payload.bytes)
        }
        return wait(for: "Stamped", seconds: 120).flatMap { Percentiles(bytes: $0.bytes, count: count) }
    }

    func flood(_ payload: Payload, count: Int) -> Double? {
        let start = monotonicNanoseconds()
        for _ in 0..<count { bus.emit("Flood", total: UInt32(count), stamp: 0, bytes: payload.bytes) }
        guard wait(for: "Flooded", seconds: 300) != nil else { return nil }
        return Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    // MARK: The other side

    /// The echo peer (`members` Ping, Stamp, Flood) or a fan-out sink (Fan): serves until the bus goes away.
    static func peer(address: String, members: [String]) -> Never {
        guard let bus = DBusConnection(address: address, members: members) else { exit(1) }
        var collector = StampCollector()
        var counted = 0
        bus.emit("Ready", total: 0, stamp: 0, bytes: [])
        while let signal = bus.next(seconds: 3600) {
            switch signal.member {
            case "Ping":
                bus.emit("Pong", total: 0, stamp: 0, bytes: signal.bytes)
            case "Stamp":
                if let result = collector.add(stamp: signal.stamp, total: Int(signal.total)) {
                    bus.emit("Stamped", total: 0, stamp: 0, bytes: result.bytes)
                }
            default:
                counted += 1
                if counted == Int(signal.total) {
                    counted = 0
                    bus.emit(signal.member == "Fan" ? "Fanned" : "Flooded", total: 0, stamp: UInt64(peakResidentKiB()), bytes: [])
                }
            }
        }
        exit(0)
    }

    /// In a fan-out child: starts eight sinks on the bus and emits each signal once; the daemon copies it.
    static func fanOut(_ payload: Payload, count: Int, address: String) throws -> FanOutResult? {
        guard let bus = DBusConnection(address: address, members: ["Ready", "Fanned"]) else { return nil }
        let sinks = try (0..<8).map { _ in try spawnSelf(["dbus-sink", "--bus", address]) }
        defer { sinks.forEach(stopProcess) }
        var ready = 0
        while ready < 8 {
            guard let signal = bus.next(seconds: 30) else { return nil }
            if signal.member == "Ready" { ready += 1 }
        }
        let start = monotonicNanoseconds()
        for _ in 0..<count { bus.emit("Fan", total: UInt32(count), stamp: 0, bytes: payload.bytes) }
        var fanned = 0, largest = 0
        while fanned < 8 {
            guard let signal = bus.next(seconds: 300) else { return nil }
            if signal.member == "Fanned" {
                fanned += 1
                largest = max(largest, Int(signal.stamp))
            }
        }
        let rate = Double(count) / (Double(monotonicNanoseconds() - start) / 1e9)
        return FanOutResult(rate: rate, posterKiB: peakResidentKiB(), sinkKiB: largest)
    }
}
