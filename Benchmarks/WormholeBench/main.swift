// Measures Wormhole on this machine: the userInfo codec against Foundation's archiver; between two processes,
// one-way latency (half the round trip of a ping answered by a pong) and one-way throughput; the raw socket
// floor; a post to a stopped receiver; MMWormhole's file way and Foundation's in-process center; fan-out to 8.
//
//     swift run -c release wormhole-bench [--quick] [--json FILE] [--svg FILE]
import Foundation
import Synchronization
import Wormhole

/// Counts arrivals and lets the main thread wait for a given total, with a timeout.
final class Arrivals: Sendable {
    private let count = Mutex(0)
    private let condition = NSCondition()

    func add() {
        count.withLock { $0 += 1 }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    func wait(until total: Int, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while count.withLock({ $0 }) < total {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Each payload, and by how much to divide the sample counts for it (large ones are slow to archive).
let payloads: [(String, [AnyHashable: Any]?, Int)] = [
    ("no userInfo", nil, 1),
    ("[\"n\": 1]", ["n": 1], 1),
    ("3-key nested", ["key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1]], 1),
    ("64 KiB Data", ["data": Data(count: 64 * 1024)], 20),
]

// The peer: answers every ping with a pong carrying the same userInfo, and counts floods.
/// A peer's last step: counts `name` notifications, posts `answer` each time it has as many as their object
/// says, announces itself ready, and serves until killed.
func countArrivals(of name: String, answering answer: String, on center: GroupNotificationCenter) -> Never {
    let received = Mutex(0)
    center.addObserver(forName: .init(name), object: nil, queue: nil) { note in
        let total = (note.object as? String).flatMap(Int.init) ?? 0
        if received.withLock({ $0 += 1; return $0 }) == total {
            received.withLock { $0 = 0 }
            center.post(name: .init(answer), object: nil)
        }
    }
    center.post(name: .init("ready"), object: nil)
    while true { sleep(1000) }
}

if CommandLine.arguments.dropFirst().first == "peer", let path = option("--container") {
    let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: path))
    center.addObserver(forName: .init("ping"), object: nil, queue: nil) { note in
        center.post(name: .init("pong"), object: nil, userInfo: note.userInfo)
    }
    countArrivals(of: "flood", answering: "flooded", on: center)
}

if CommandLine.arguments.dropFirst().first == "raw-peer", let path = option("--path") {
    RawSocket.peer(path: path)
}
if CommandLine.arguments.dropFirst().first == "file-peer", let folder = option("--folder") {
    FileWay.peer(folder: folder)
}
// A fan-out sink: counts "fan" notifications and says "fanned" when it has the number its object names.
if CommandLine.arguments.dropFirst().first == "sink", let path = option("--container") {
    countArrivals(of: "fan", answering: "fanned", on: try GroupNotificationCenter(containerURL: URL(fileURLWithPath: path)))
}

/// Every measured row, for `--json FILE`.
nonisolated(unsafe) var results: [[String: Any]] = []  // Safe because only the main thread touches it.
func record(_ mechanism: String, _ payload: String, p50: Double?, p99: Double?, rate: Double?, fanOut: Double? = nil) {
    var row: [String: Any] = ["mechanism": mechanism, "payload": payload]
    row["p50_us"] = p50
    row["p99_us"] = p99
    row["throughput_per_s"] = rate
    row["fan_out_8_per_s"] = fanOut
    results.append(row)
}

let quick = CommandLine.arguments.contains("--quick")
let rounds = quick ? 300 : 5_000
let floodSize = quick ? 2_000 : 20_000
let folder = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
var template = Array((folder + "wormhole-bench-XXXXXX").utf8CString)
guard let made = mkdtemp(&template) else { fatalError("cannot create a temporary folder") }  // Safe because: a benchmark, not the library.
let container = String(cString: made)
defer { try? FileManager.default.removeItem(atPath: container) }

let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
let pongs = Arrivals(), ready = Arrivals(), flooded = Arrivals()
center.addObserver(forName: .init("pong"), object: nil, queue: nil) { _ in pongs.add() }
center.addObserver(forName: .init("ready"), object: nil, queue: nil) { _ in ready.add() }
center.addObserver(forName: .init("flooded"), object: nil, queue: nil) { _ in flooded.add() }

let peer = Process()
peer.executableURL = Bundle.main.executableURL
peer.arguments = ["peer", "--container", container]
try peer.run()
defer { peer.terminate() }
guard ready.wait(until: 1, seconds: 10) else { fatalError("peer did not start") }  // Safe because: a benchmark.

/// The fastest of five runs of `count` calls, in microseconds per call.
func microseconds(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let start = nanoseconds()
        for _ in 0..<count { try body() }
        best = min(best, Double(nanoseconds() - start) / Double(count) / 1000)
    }
    return best
}

let foundationClasses: [AnyClass] = [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self]
print("userInfo codec, encode + decode, µs (fastest of 5 runs)")
print("payload          SecureArchive   NSKeyedArchiver/Unarchiver")
for (label, userInfo, divisor) in payloads {
    guard let userInfo else { continue }
    let calls = (quick ? 200 : 5_000) / divisor
    let ours = try microseconds(calls) {
        _ = try SecureArchive.unarchivedObject(ofClasses: foundationClasses, from: SecureArchive.archivedData(withRootObject: userInfo))
    }
    let theirs = try microseconds(max(1, calls / 20)) {
        let data = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: userInfo), requiringSecureCoding: true)
        _ = try NSKeyedUnarchiver.unarchivedObject(ofClasses: foundationClasses, from: data)
    }
    print(label.padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: " %12.1f   %12.1f", ours, theirs))
}
print("")

print("Wormhole, two processes, \(rounds) round trips and \(floodSize) one-way posts per payload (fewer for large ones)")
print("payload          one-way p50   one-way p99   throughput 1→1   spooled")
var pongTotal = 0
var floodTotal = 0
for (label, userInfo, divisor) in payloads {
    var samples: [UInt64] = []
    samples.reserveCapacity(rounds)
    for _ in 0..<(rounds / divisor) {
        let start = nanoseconds()
        center.post(name: .init("ping"), object: nil, userInfo: userInfo)
        pongTotal += 1
        guard pongs.wait(until: pongTotal, seconds: 10) else { fatalError("pong lost") }  // Safe because: a benchmark.
        samples.append((nanoseconds() - start) / 2)
    }
    samples.sort()
    let p50 = Double(samples[samples.count / 2]) / 1000
    let p99 = Double(samples[samples.count * 99 / 100]) / 1000

    // The object tells the peer how many to expect, so the userInfo is exactly the payload measured.
    let count = floodSize / divisor
    let spooledBefore = center.statistics.spooled
    let start = nanoseconds()
    for _ in 0..<count { center.post(name: .init("flood"), object: String(count), userInfo: userInfo) }
    floodTotal += 1
    guard flooded.wait(until: floodTotal, seconds: 300) else { fatalError("flood lost") }  // Safe because: a benchmark.
    let rate = Double(count) / (Double(nanoseconds() - start) / 1e9)
    let spooled = 100 * Double(center.statistics.spooled - spooledBefore) / Double(count)
    record("Wormhole", label, p50: p50, p99: p99, rate: rate)
    let name = label.padding(toLength: 16, withPad: " ", startingAt: 0)
    print(name + String(format: " %9.1f µs  %9.1f µs  %10.0f /s   %5.1f %%", p50, p99, rate, spooled))
}

// The floor: a raw seqpacket socket, frames of the same size as Wormhole's with no userInfo.
let rawPath = container + "/raw.socket"
let rawPeer = Process()
rawPeer.executableURL = Bundle.main.executableURL
rawPeer.arguments = ["raw-peer", "--path", rawPath]
rawPeer.standardOutput = FileHandle.nullDevice
try rawPeer.run()
defer { rawPeer.terminate() }
if let fd = RawSocket.connect(path: rawPath) {
    let frameSize = 32
    let samples = RawSocket.latencies(fd, rounds: rounds, size: frameSize)
    let rate = RawSocket.throughput(fd, count: floodSize * 5, size: frameSize)
    let name = "raw seqpacket".padding(toLength: 16, withPad: " ", startingAt: 0)
    let (p50, p99) = (Double(samples[samples.count / 2]) / 1000, Double(samples[samples.count * 99 / 100]) / 1000)
    record("raw AF_UNIX seqpacket", "32 bytes", p50: p50, p99: p99, rate: rate)
    print(name + String(format: " %9.1f µs  %9.1f µs  %10.0f /s      (the floor)", p50, p99, rate))
    close(fd)
}

// The cost of a post while the receiver is stopped, against a post to the running receiver, and how fast
// the receiver catches up after SIGCONT.
func postCosts(_ count: Int) -> [UInt64] {
    var samples: [UInt64] = []
    for _ in 0..<count {
        let start = nanoseconds()
        center.post(name: .init("flood"), object: String(count), userInfo: nil)
        samples.append(nanoseconds() - start)
    }
    return samples.sorted()
}
let stoppedCount = quick ? 2_000 : 20_000
let running = postCosts(stoppedCount)
floodTotal += 1
_ = flooded.wait(until: floodTotal, seconds: 60)
kill(peer.processIdentifier, SIGSTOP)
usleep(200_000)
let spooledBefore = center.statistics.spooled
let stopped = postCosts(stoppedCount)
let spooledWhileStopped = center.statistics.spooled - spooledBefore
let resumed = nanoseconds()
kill(peer.processIdentifier, SIGCONT)
floodTotal += 1
_ = flooded.wait(until: floodTotal, seconds: 120)
let drainRate = Double(stoppedCount) / (Double(nanoseconds() - resumed) / 1e9)
func percentile(_ samples: [UInt64], _ fraction: Double) -> Double {
    Double(samples[min(samples.count - 1, Int(Double(samples.count) * fraction))]) / 1000
}
print("")
print("post, no userInfo, \(stoppedCount) posts     p50        p99")
print(String(format: "receiver running         %7.1f µs  %7.1f µs", percentile(running, 0.5), percentile(running, 0.99)))
print(String(format: "receiver stopped         %7.1f µs  %7.1f µs   (%d spooled; p99 ratio %.1f×)",
    percentile(stopped, 0.5), percentile(stopped, 0.99), spooledWhileStopped, percentile(stopped, 0.99) / percentile(running, 0.99)))
print(String(format: "after SIGCONT, the receiver caught up at %.0f notifications/s", drainRate))

// What users would pick instead: MMWormhole's files, and Foundation's in-process center (the ceiling).
print("")
print("alternatives, 3-key nested userInfo   one-way p50   one-way p99   throughput 1→1")
let nested: [AnyHashable: Any] = ["key1": "string1", "key2": 1, "key3": ["innerKey1": "innerString1", "innerKey2": 1]]
let files = container + "/files"
try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
let fileWatcher = FileWay.watch(files)
let filePeer = Process()
filePeer.executableURL = Bundle.main.executableURL
filePeer.arguments = ["file-peer", "--folder", files]
try filePeer.run()
defer { filePeer.terminate() }
while !FileWay.names(from: fileWatcher).contains("ready") {}
let fileRun = FileWay.measure(folder: files, watcher: fileWatcher, payload: nested, rounds: rounds / 10, count: floodSize / 20)
let fileP50 = Double(fileRun.latencies[fileRun.latencies.count / 2]) / 1000
let fileP99 = Double(fileRun.latencies[fileRun.latencies.count * 99 / 100]) / 1000
record("MMWormhole's way (file + rename + inotify)", "3-key nested", p50: fileP50, p99: fileP99, rate: fileRun.rate)
print(String(format: "file + rename + inotify           %9.1f µs  %9.1f µs  %10.0f /s", fileP50, fileP99, fileRun.rate))

let local = NotificationCenter.default
let arrived = Mutex<UInt64>(0)
let token = local.addObserver(forName: .init("local"), object: nil, queue: nil) { _ in
    arrived.withLock { $0 = nanoseconds() }
}
var localSamples: [UInt64] = []
for _ in 0..<rounds {
    let start = nanoseconds()
    local.post(name: .init("local"), object: nil, userInfo: nested)
    localSamples.append(arrived.withLock { $0 } - start)
}
localSamples.sort()
let localStart = nanoseconds()
for _ in 0..<floodSize { local.post(name: .init("local"), object: nil, userInfo: nested) }
let localRate = Double(floodSize) / (Double(nanoseconds() - localStart) / 1e9)
local.removeObserver(token)
let localP50 = Double(localSamples[localSamples.count / 2]) / 1000
let localP99 = Double(localSamples[localSamples.count * 99 / 100]) / 1000
record("Foundation NotificationCenter, in-process", "3-key nested", p50: localP50, p99: localP99, rate: localRate)
print(String(format: "Foundation, in one process        %9.1f µs  %9.1f µs  %10.0f /s", localP50, localP99, localRate))

// Fan-out: one poster, eight observer processes.
let fanned = Arrivals()
center.addObserver(forName: .init("fanned"), object: nil, queue: nil) { _ in fanned.add() }
let readyBefore = 1
var sinks: [Process] = []
for _ in 0..<8 {
    let sink = Process()
    sink.executableURL = Bundle.main.executableURL
    sink.arguments = ["sink", "--container", container]
    try sink.run()
    sinks.append(sink)
}
defer { sinks.forEach { $0.terminate() } }
_ = ready.wait(until: readyBefore + 8, seconds: 30)
let fanCount = quick ? 2_000 : 20_000
let fanStart = nanoseconds()
for _ in 0..<fanCount { center.post(name: .init("fan"), object: String(fanCount), userInfo: nil) }
let fanDone = fanned.wait(until: 8, seconds: 300)
let fanRate = Double(fanCount) / (Double(nanoseconds() - fanStart) / 1e9)
record("Wormhole", "no userInfo", p50: nil, p99: nil, rate: nil, fanOut: fanDone ? fanRate : nil)
// The floor of fan-out: eight raw peers, each message sent to all eight.
var rawFanRate: Double?
var rawPeers: [Process] = []
var rawFanSockets: [Int32] = []
for index in 0..<8 {
    let path = container + "/raw-fan-\(index).socket"
    let rawPeer = Process()
    rawPeer.executableURL = Bundle.main.executableURL
    rawPeer.arguments = ["raw-peer", "--path", path]
    try rawPeer.run()
    rawPeers.append(rawPeer)
    if let fd = RawSocket.connect(path: path) { rawFanSockets.append(fd) }
}
defer { rawPeers.forEach { $0.terminate() } }
if rawFanSockets.count == 8 {
    rawFanRate = RawSocket.fanOut(rawFanSockets, count: fanCount, size: 32)
}
rawFanSockets.forEach { close($0) }
record("raw AF_UNIX seqpacket", "32 bytes", p50: nil, p99: nil, rate: nil, fanOut: rawFanRate)
print("")
print(fanDone ? String(format: "fan-out, 1 poster → 8 observer processes, no userInfo: %.0f notifications/s (each to all 8)", fanRate)
    : "fan-out: not every observer process got everything within 300 s")
if let rawFanRate {
    print(String(format: "fan-out floor, raw seqpacket to 8 processes: %.0f messages/s (each to all 8); Wormhole is at %.0f %%",
        rawFanRate, 100 * fanRate / rawFanRate))
}
print("D-Bus: not measured yet")

if let path = option("--svg") {
    try Chart.svg(results).write(toFile: path, atomically: true, encoding: .utf8)
    print("wrote \(path)")
}
if let path = option("--json") {
    let data = try JSONSerialization.data(withJSONObject: results, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}
