// Measures Wormhole on this machine against the socket underneath it and against what users would pick instead:
// a raw AF_UNIX seqpacket socket (the limit), D-Bus signals through a private dbus-daemon, MMWormhole's file
// way, and Foundation's in-process NotificationCenter. For each mechanism and payload: one-way latency (half a
// ping-pong round trip, and stamped by the sender's monotonic clock), throughput to one process and to eight,
// and the fan-out's peak memory. Then Wormhole alone: its codec against Foundation's archiver, a post to a
// stopped receiver, and the cost of a post as the registry grows.
//
//     swift run -c release wormhole-bench [--quick] [--json FILE] [--svg FILE] [--markdown FILE] [--only raw|wormhole|dbus|file]
//         [--cpu N]
import Foundation
import Wormhole

// The other sides, each started by the benchmark as a process of its own, and gone within a second of the
// process that started them, however that one ended.
let roles: Set = ["wormhole-peer", "wormhole-sink", "raw-peer", "file-peer", "dbus-peer", "dbus-sink", "crowd", "fan-out"]
if let role = CommandLine.arguments.dropFirst().first, roles.contains(role) { exitWithParent() }
switch CommandLine.arguments.dropFirst().first {
case "wormhole-peer": try WormholeWay.peer(container: option("--container") ?? "")
case "wormhole-sink": try WormholeWay.sink(container: option("--container") ?? "")
case "raw-peer": RawSocket.peer(path: option("--path") ?? "")
case "file-peer": FileWay.peer(folder: option("--folder") ?? "")
case "dbus-peer": DBusWay.peer(address: option("--bus") ?? "", members: ["Ping", "Stamp", "Flood"])
case "dbus-sink": DBusWay.peer(address: option("--bus") ?? "", members: ["Fan"])
case "crowd":
    try RegistryGrowth.crowd(container: option("--container") ?? "", count: option("--count").flatMap(Int.init) ?? 0)
case "fan-out": try FanOut.child()
default: break
}

lineBufferedOutput()
// --cpu N: this process and every process it starts run on that one CPU, so that no wake-up crosses CPUs.
if let cpu = option("--cpu").flatMap(Int32.init) { pinToCPU(cpu) }
let quick = CommandLine.arguments.contains("--quick")
let counts = quick ? Counts.quick : Counts.full
let temporary = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
var template = Array((temporary + "wormhole-bench-XXXXXX").utf8CString)
guard let made = mkdtemp(&template) else { throw BenchError("cannot create a temporary folder") }
let folder = String(cString: made)
defer { try? FileManager.default.removeItem(atPath: folder) }

// The codec alone.
/// The fastest of five runs of `count` calls, in microseconds per call.
func microseconds(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let start = monotonicNanoseconds()
        for _ in 0..<count { try body() }
        best = min(best, Double(monotonicNanoseconds() - start) / Double(count) / 1000)
    }
    return best
}
print("userInfo codec, encode + decode, µs (fastest of 5 runs)")
print("payload          SecureArchive   NSKeyedArchiver/Unarchiver")
for payload in Payload.all {
    guard let userInfo = payload.userInfo else { continue }
    let calls = max(2, (quick ? 200 : 5_000) / payload.divisor)
    let ours = try microseconds(calls) {
        _ = try SecureArchive.unarchivedObject(ofClasses: FileWay.classes, from: SecureArchive.archivedData(withRootObject: userInfo))
    }
    let theirs = try microseconds(max(1, calls / 20)) {
        let data = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: userInfo), requiringSecureCoding: true)
        _ = try NSKeyedUnarchiver.unarchivedObject(ofClasses: FileWay.classes, from: data)
    }
    print(payload.label.padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: " %12.1f   %12.1f", ours, theirs))
}

// Every mechanism with every payload.
let raw = try RawSocket(folder: folder)
let wormhole = try WormholeWay(container: folder + "/wormhole")
let files = try FileWay(folder: folder + "/files")
let dbusSkipped = DBusWay.unavailableReason
var dbus: DBusWay?
if dbusSkipped == nil {
    do { dbus = try DBusWay(folder: folder) } catch { print("D-Bus: \(error)") }
}
// Top-level objects are never deinitialized: the daemon, which cannot watch for its parent, is stopped here.
defer { dbus?.stop() }
var mechanisms: [(key: String, way: any Mechanism)] = [("raw", raw), ("wormhole", wormhole)]
if let dbus { mechanisms.append(("dbus", dbus)) }
mechanisms.append(("file", files))
if let only = option("--only") { mechanisms.removeAll { $0.key != only } }

print("\nmeasuring \(mechanisms.count) mechanisms and Foundation in-process, \(counts.rounds) round trips per small payload")
var rows: [Row] = []
for (index, payload) in Payload.all.enumerated() {
    for (key, way) in mechanisms {
        let scaled = counts.scaled(payload, slowness: way.slowness)
        let latency = Percentiles(nanoseconds: way.pingPong(payload, rounds: scaled.rounds))
        // One round trip between stamps, so that the stamped latency is not a queue's.
        let interval = UInt64(max(20, 2 * (latency?.p50 ?? 50)) * 1000)
        let stamped = way.stamped(payload, count: scaled.rounds, interval: interval)
        let rate = way.flood(payload, count: scaled.flood)
        let fanOut = FanOut.run(
            mechanism: key, payload: index, count: scaled.fanOut, folder: folder + "/fan-\(key)-\(index)", bus: dbus?.address)
        rows.append(Row(mechanism: way.name, payload: payload.label, latency: latency, stamped: stamped, rate: rate, fanOut: fanOut))
        print("  \(way.name), \(payload.label): done")
    }
    rows.append(LocalWay.measure(payload, counts: counts.scaled(payload)))
}
Report.relate(&rows, limit: raw.name)
print("")
print(Report.table(rows))
print("p50/p99/p99.9: half a ping-pong round trip. stamped: the receiver's clock minus the sender's, one message a round trip.")
print("1→8: one poster, eight receiving processes (Foundation: eight observers); peak RSS from that run.")
if let dbusSkipped { print("D-Bus: \(dbusSkipped)") }

// A post to a stopped receiver against one to a running receiver, and how fast it catches up after SIGCONT.
let stoppedCount = quick ? 2_000 : 20_000
let running = Percentiles(nanoseconds: wormhole.timedPosts(stoppedCount))
_ = wormhole.awaitFlood(seconds: 60)
kill(wormhole.peerIdentifier, SIGSTOP)
usleep(200_000)
let spooledBefore = wormhole.center.statistics.spooled
let stopped = Percentiles(nanoseconds: wormhole.timedPosts(stoppedCount))
let spooledWhileStopped = wormhole.center.statistics.spooled - spooledBefore
let resumed = monotonicNanoseconds()
kill(wormhole.peerIdentifier, SIGCONT)
let drained = wormhole.awaitFlood(seconds: 120)
let drainRate = Double(stoppedCount) / (Double(monotonicNanoseconds() - resumed) / 1e9)
print("\nWormhole post, no userInfo, \(stoppedCount) posts    p50        p99        p99.9")
if let running, let stopped {
    print(String(format: "receiver running                %7.1f µs  %7.1f µs  %7.1f µs", running.p50, running.p99, running.p999))
    print(String(format: "receiver stopped (SIGSTOP)      %7.1f µs  %7.1f µs  %7.1f µs   (%d spooled)",
        stopped.p50, stopped.p99, stopped.p999, spooledWhileStopped))
}
print(drained ? String(format: "after SIGCONT, the receiver caught up at %.0f notifications/s", drainRate) : "the receiver did not catch up")

// The cost of a post as other listeners join the registry.
let growth = try RegistryGrowth.measure(folder: folder, posts: quick ? 2_000 : 20_000)
print("\nWormhole post, no userInfo, to one receiver, with other listeners registered for other names")
print("other listeners   p50        p99")
for (listeners, cost) in growth {
    print(String(format: "%15d   %6.2f µs  %6.2f µs", listeners, cost.p50, cost.p99))
}

// The targets, as ratios within this run.
let row = { (mechanism: String, payload: String) in rows.first { $0.mechanism == mechanism && $0.payload == payload } }
func verdict(_ met: Bool?) -> String { met.map { $0 ? "met" : "missed" } ?? "not measured" }
let plain = row(wormhole.name, "no userInfo"), nested = row(wormhole.name, "3-key nested")
let rawPlain = row(raw.name, "no userInfo")
var targets: [(String, String, Bool?)] = []
if let ratio = plain?.latencyRatio { targets.append(("p50, no userInfo, ≤ 2× the limit", String(format: "%.1f×", ratio), ratio <= 2)) }
if let ratio = nested?.latencyRatio { targets.append(("p50, 3-key, ≤ 3× the limit", String(format: "%.1f×", ratio), ratio <= 3)) }
if let ratio = plain?.rateRatio {
    targets.append(("throughput, no userInfo, ≥ 50 % of the limit", String(format: "%.0f %%", ratio * 100), ratio >= 0.5))
}
if let rate = nested?.rate { targets.append(("throughput, 3-key, ≥ 100k/s", String(format: "%.0f/s", rate), rate >= 100_000)) }
if let ours = plain?.fanOut?.rate, let floor = rawPlain?.fanOut?.rate {
    targets.append(("fan-out 1→8 ≥ 50 % of the limit's", String(format: "%.0f %%", 100 * ours / floor), ours >= floor / 2))
}
if let dbus, let theirs = row(dbus.name, "3-key nested"), let p50 = nested?.latency?.p50, let theirP50 = theirs.latency?.p50,
    let rate = nested?.rate, let theirRate = theirs.rate
{
    targets.append(("p50 ≥ 5× lower than D-Bus (3-key)", String(format: "%.1f×", theirP50 / p50), theirP50 / p50 >= 5))
    targets.append(("throughput ≥ 3× D-Bus (3-key)", String(format: "%.1f×", rate / theirRate), rate / theirRate >= 3))
}
if let theirs = row(files.name, "3-key nested")?.latency?.p50, let p50 = nested?.latency?.p50 {
    targets.append(("p50 ≥ 10× lower than the file way (3-key)", String(format: "%.1f×", theirs / p50), theirs / p50 >= 10))
}
if let running, let stopped {
    let ratio = stopped.p99 / running.p99
    targets.append(("post to a stopped receiver, p99 ≤ 5× a normal post", String(format: "%.1f×", ratio), ratio <= 5))
}
if let first = growth.first?.cost.p50, let last = growth.last?.cost.p50, first > 0 {
    let change = last / first - 1
    targets.append(("post cost flat (±20 %) from 1 to 256 listeners", String(format: "%+.0f %%", change * 100), abs(change) <= 0.2))
}
print("\ntargets, as ratios within this run")
for (target, result, met) in targets {
    print(target.padding(toLength: 56, withPad: " ", startingAt: 0) + result.padding(toLength: 10, withPad: " ", startingAt: 0) + verdict(met))
}

if let path = option("--svg") {
    try Chart.svg(rows).write(toFile: path, atomically: true, encoding: .utf8)
    print("wrote \(path)")
}
if let path = option("--markdown") {
    try (Report.markdown(rows) + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    print("wrote \(path)")
}
if let path = option("--json") {
    var document: [String: Any] = ["rows": rows.map(\.json), "quick": quick]
    document["targets"] = targets.map { ["target": $0.0, "result": $0.1, "met": $0.2 as Any] }
    document["registry_growth"] = growth.map { ["other_listeners": $0.listeners, "post_p50_us": $0.cost.p50, "post_p99_us": $0.cost.p99] }
    if let running, let stopped {
        document["stopped_receiver"] = [
            "running_p50_us": running.p50, "running_p99_us": running.p99, "stopped_p50_us": stopped.p50,
            "stopped_p99_us": stopped.p99, "drain_per_s": drainRate,
        ]
    }
    if let dbusSkipped { document["dbus"] = dbusSkipped }
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}
