// Measures Wormhole on this machine against the socket underneath it and against what users would pick instead.
// Wormhole runs on each of its transports side by side, sequenced packets and datagrams, and each has for its
// limit a raw AF_UNIX socket of the same type (SOCK_SEQPACKET, SOCK_DGRAM) carrying the same bytes; then D-Bus
// signals through a private dbus-daemon, MMWormhole's file way, and Foundation's in-process NotificationCenter.
// For each mechanism and payload: one-way latency (half a ping-pong round trip, and stamped by the sender's
// monotonic clock), throughput to one process and to eight, and the fan-out's peak memory. Then Wormhole alone,
// on each transport: a post to a stopped receiver, and the cost of a post as the registry grows; and its codec
// against Foundation's archiver.
//
//     swift run -c release wormhole-bench [--quick] [--json FILE] [--svg FILE] [--markdown FILE] [--only raw|wormhole|dbus|file]
//         [--cpu N] [--spool-memory] [--observer-kinds [--transport datagram]] [--waiting-poster]
//         [--ping-pong ROUNDS --container DIR [--payload none|3-key|1mib]] [--bridge [--rounds N] [--burst N] [--passes N]]
//
// `--bridge` measures only the bridge between two hosts against the NATS server's own costs through the same client
// (BridgeBench): it needs nats-server, and starts one itself.
//
// `--ping-pong` runs that many ping-pong rounds on Wormhole alone and nothing else, for counting instructions
// with callgrind (InstructionCount).
//
// `--waiting-poster` measures only the p50 latency of a poster that waits for its observer's answer each time,
// as an app does, against the raw socket; run it with `--cpu 0` so that both processes share one CPU.
//
// `--spool-memory` measures only what a large post through the spool costs each side in memory (SpoolMemory).
// `--observer-kinds` measures only the CPU time per notification of each kind of observer (ObserverCost); run it
// with `--cpu 0` (or under `taskset -c 0`) so that both processes share one CPU; with `--transport datagram`, over
// datagrams against the raw datagram socket.
//
// `--only raw` keeps both raw sockets, `--only wormhole` both of Wormhole's transports. The benchmark's own
// centers name their transport in their Configuration; the processes it starts get theirs through
// WORMHOLE_TRANSPORT, whatever the environment it was started with says.
import Foundation
@_spi(Benchmarking) import Wormhole

// The other sides, each started by the benchmark as a process of its own, and gone within a second of the
// process that started them, however that one ended.
let roles: Set = [
    "wormhole-peer", "wormhole-sink", "raw-peer", "file-peer", "dbus-peer", "dbus-sink", "crowd", "fan-out", "spool-listener",
    "spool-poster", "raw-run", "observer-run", "observer-echo", "raw-hop-run", "raw-hop-echo", "bridge-host",
]
if let role = CommandLine.arguments.dropFirst().first, roles.contains(role) { exitWithParent() }
switch CommandLine.arguments.dropFirst().first {
case "wormhole-peer": try WormholeWay.peer(container: containerOption())
case "wormhole-sink": try WormholeWay.sink(container: containerOption())
case "raw-peer":
    RawSocket.peer(
        path: option("--path") ?? "", transport: transportOption() ?? .sequencedPacket,
        polled: CommandLine.arguments.contains("--polled"))
case "file-peer": FileWay.peer(folder: option("--folder") ?? "")
case "dbus-peer": DBusWay.peer(address: option("--bus") ?? "", members: ["Ping", "Stamp", "Flood"])
case "dbus-sink": DBusWay.peer(address: option("--bus") ?? "", members: ["Fan"])
case "crowd":
    try RegistryGrowth.crowd(container: containerOption(), count: option("--count").flatMap(Int.init) ?? 0)
case "fan-out": try FanOut.child()
case "spool-listener": try SpoolMemory.listen(container: containerOption(), size: option("--size").flatMap(Int.init) ?? 0)
case "spool-poster": try SpoolMemory.post(container: containerOption(), size: option("--size").flatMap(Int.init) ?? 0)
case "raw-run":
    try ObserverCost.rawRun(
        path: option("--path") ?? "", rounds: option("--rounds").flatMap(Int.init) ?? 0,
        polled: CommandLine.arguments.contains("--polled"), transport: transportOption() ?? .sequencedPacket)
case "observer-run":
    try ObserverCost.run(
        container: containerOption(), kind: option("--kind").flatMap(ObserverCost.Kind.init) ?? .receiveThread,
        rounds: option("--rounds").flatMap(Int.init) ?? 0)
case "observer-echo":
    try ObserverCost.echo(container: containerOption(), kind: option("--kind").flatMap(ObserverCost.Kind.init) ?? .receiveThread)
case "raw-hop-run":
    try RawHop.run(
        path: option("--path") ?? "", kind: option("--kind").flatMap(ObserverCost.Kind.init) ?? .receiveThread,
        rounds: option("--rounds").flatMap(Int.init) ?? 0)
case "raw-hop-echo":
    try RawHop.echo(path: option("--path") ?? "", kind: option("--kind").flatMap(ObserverCost.Kind.init) ?? .receiveThread)
case "bridge-host":
    try BridgeWay.host(container: containerOption(), server: option("--server") ?? "", ready: option("--ready") ?? "")
// Not ended with its parent as the others are: it kills its server first, once its standard input ends.
case "nats-guard": try LocalNATSServer.guardServer(folder: option("--folder") ?? "", server: option("--server") ?? "")
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

/// What a large post through the spool costs each side in memory, as on Apple platforms.
func spoolMemoryReport() throws -> [(size: Int, poster: Double, listener: Double)] {
    let results = try SpoolMemory.measure(folder: folder)
    print("memory of a post through the spool (no memory file, as on Apple platforms): peak resident growth, × the payload")
    for result in results {
        print(String(format: "  %8.2f MiB Data: poster %.2f×, listener %.2f×", Double(result.size) / 1_048_576, result.poster, result.listener))
    }
    return results
}
if let rounds = option("--ping-pong").flatMap(Int.init) {
    try? FileManager.default.removeItem(atPath: folder)
    try InstructionCount.run(rounds: rounds, container: containerOption())
}
if CommandLine.arguments.contains("--spool-memory") {
    _ = try spoolMemoryReport()
    try? FileManager.default.removeItem(atPath: folder)
    exit(0)
}

/// CPU time per notification with each kind of observer, against the raw socket, over `transport`.
func observerCostReport(_ transport: Transport = .sequencedPacket) -> [ObserverCost.Result] {
    let results = ObserverCost.measure(folder: folder, runs: quick ? 1 : 3, quick: quick, transport: transport)
    let (short, long) = quick ? (ObserverCost.shortRounds / 10, ObserverCost.longRounds / 10) : (ObserverCost.shortRounds, ObserverCost.longRounds)
    print("CPU time per notification, ping-pong, both sides observing with one kind (getrusage user + system, "
        + "\(long) minus \(short) round trips, best of \(quick ? 1 : 3))")
    for result in results {
        let figures = result.microseconds.map { microseconds in
            String(format: "%7.2f µs", microseconds) + (result.ratio.map { String(format: "  %5.2f×", $0) } ?? "")
                + (result.matchedRatio.map { String(format: "  %5.2f× matched", $0) } ?? "")
        }
        print(result.label.padding(toLength: 48, withPad: " ", startingAt: 0) + (figures ?? "not measured: the runs were disturbed"))
    }
    return results
}
if CommandLine.arguments.contains("--observer-kinds") {
    _ = observerCostReport(transportOption() ?? .sequencedPacket)
    try? FileManager.default.removeItem(atPath: folder)
    exit(0)
}

/// p50 one-way latency with the poster waiting for its observer's answer, as an app does, against the raw
/// socket: blocking in its own receive, and woken by a receive thread of its own as Wormhole's poster is; beside
/// it the ping-pong the main table measures, where the next ping is posted from the observer of the pong.
func waitingPosterReport() throws {
    let rounds = quick ? 2_000 : 20_000
    print("p50 one-way latency µs, poster waiting for its observer's answer (\(rounds) round trips, best p50 of 3 runs)")
    print("payload          raw blocking   raw + thread   Wormhole waiting   × raw   × raw+thread   Wormhole from observer   × raw")
    let raw = try RawSocket(folder: folder, transport: .sequencedPacket)
    let wormhole = try WormholeWay(container: folder + "/waiting", transport: .sequencedPacket)
    for payload in Payload.all.prefix(3) {
        var best = [Double](repeating: .infinity, count: 4)
        for _ in 0..<3 {
            let runs = [
                raw.pingPong(payload, rounds: rounds), raw.waitingPingPong(payload, rounds: rounds),
                wormhole.waitingPingPong(payload, rounds: rounds), wormhole.pingPong(payload, rounds: rounds),
            ]
            for (index, samples) in runs.enumerated() {
                if let p50 = Percentiles(nanoseconds: samples)?.p50 { best[index] = min(best[index], p50) }
            }
        }
        print(payload.label.padding(toLength: 16, withPad: " ", startingAt: 0)
            + String(format: " %12.2f   %12.2f   %16.2f   %5.2f   %12.2f   %22.2f   %5.2f",
                best[0], best[1], best[2], best[2] / best[0], best[2] / best[1], best[3], best[3] / best[0]))
    }
}
if CommandLine.arguments.contains("--waiting-poster") {
    try waitingPosterReport()
    try? FileManager.default.removeItem(atPath: folder)
    exit(0)
}

if CommandLine.arguments.contains("--bridge") {
    var counts = quick ? BridgeBench.Counts.quick : BridgeBench.Counts.full
    if let rounds = option("--rounds").flatMap(Int.init), rounds > 0 { (counts.rounds, counts.warmUp) = (rounds, max(1, rounds / 10)) }
    if let burst = option("--burst").flatMap(Int.init), burst > 0 { counts.burst = burst }
    if let passes = option("--passes").flatMap(Int.init), passes > 0 { counts.passes = passes }
    var status: Int32 = 0
    do {
        try BridgeBench.run(folder: folder, counts: counts, jsonPath: option("--json"))
    } catch {
        print("wormhole-bench --bridge: \(error)")
        status = 1
    }
    try? FileManager.default.removeItem(atPath: folder)
    exit(status)
}

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
print("payload          as posted   SecureArchive   NSKeyedArchiver/Unarchiver")
/// Per payload label: the codec as posted, and Foundation's archiver, in µs per encode + decode.
var codec: [String: (posted: Double, foundation: Double)] = [:]
for payload in Payload.all {
    guard let userInfo = payload.userInfo else { continue }
    let calls = max(2, (quick ? 200 : 5_000) / payload.divisor)
    let posted = try microseconds(calls) {
        _ = try UserInfoArchive.decode(UserInfoArchive.encode(userInfo), allowedClasses: FileWay.classes)
    }
    let ours = try microseconds(calls) {
        _ = try SecureArchive.unarchivedObject(ofClasses: FileWay.classes, from: SecureArchive.archivedData(withRootObject: userInfo))
    }
    let theirs = try microseconds(max(1, calls / 20)) {
        let data = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: userInfo), requiringSecureCoding: true)
        _ = try NSKeyedUnarchiver.unarchivedObject(ofClasses: FileWay.classes, from: data)
    }
    codec[payload.label] = (posted, theirs)
    print(payload.label.padding(toLength: 16, withPad: " ", startingAt: 0) + String(format: " %9.2f   %12.1f   %12.1f", posted, ours, theirs))
}

let pages = PageCost.measure()
print("\n1 MiB of fresh memory, µs (fastest of 5 runs): memory file made, filled and freed "
    + (pages.memoryFile.map { String(format: "%.0f", $0) } ?? "–")
    + String(format: "; anonymous pages mapped, written and freed %.0f; copied into written memory %.0f", pages.freshPages, pages.warmCopy))

// Every mechanism with every payload; the raw socket and Wormhole on each transport, the raw socket first.
let transports = Transport.allCases
let raws = try transports.map { try RawSocket(folder: folder, transport: $0) }
let wormholes = try transports.map { try WormholeWay(container: folder + "/wormhole-\($0)", transport: $0) }
let files = try FileWay(folder: folder + "/files")
let dbusSkipped = DBusWay.unavailableReason
var dbus: DBusWay?
if dbusSkipped == nil {
    do { dbus = try DBusWay(folder: folder) } catch { print("D-Bus: \(error)") }
}
// Top-level objects are never deinitialized: the daemon, which cannot watch for its parent, is stopped here.
defer { dbus?.stop() }
var mechanisms: [(key: String, way: any Mechanism)] = []
for (raw, wormhole) in zip(raws, wormholes) { mechanisms += [("raw", raw), ("wormhole", wormhole)] }
if let dbus { mechanisms.append(("dbus", dbus)) }
mechanisms.append(("file", files))
if let only = option("--only") { mechanisms.removeAll { $0.key != only } }

print("\nmeasuring \(mechanisms.count) mechanisms and Foundation in-process, \(counts.rounds) round trips per small payload; "
    + "datagram sockets queue \(datagramQueueLength) messages (net.unix.max_dgram_qlen)")
var rows: [Row] = []
for (index, payload) in Payload.all.enumerated() {
    for (key, way) in mechanisms {
        let scaled = counts.scaled(payload, slowness: way.slowness)
        let latency = Percentiles(nanoseconds: way.pingPong(payload, rounds: scaled.rounds))
        // One round trip between stamps, so that the stamped latency is not a queue's.
        let interval = UInt64(max(20, 2 * (latency?.p50 ?? 50)) * 1000)
        let stamped = way.stamped(payload, count: scaled.rounds, interval: interval)
        let rate = way.flood(payload, count: scaled.flood)
        let fanFolder = folder + "/fan-\(key)" + (way.transport.map { "-\($0)" } ?? "") + "-\(index)"
        let fanOut = FanOut.run(
            mechanism: key, transport: way.transport, payload: index, count: scaled.fanOut, folder: fanFolder, bus: dbus?.address)
        rows.append(Row(
            mechanism: way.name, label: way.label, transport: way.transport, payload: payload.label, latency: latency,
            stamped: stamped, rate: rate, fanOut: fanOut))
        print("  \(way.label), \(payload.label): done")
    }
    rows.append(LocalWay.measure(payload, counts: counts.scaled(payload)))
}
/// The raw socket each row is set against: the one of its own transport; for the others, the seqpacket one.
@MainActor func limit(of transport: Transport?) -> RawSocket {
    raws.first { $0.socketType == transport } ?? raws[0]
}
Report.relate(&rows) { limit(of: $0.transport).name }
print("")
print(Report.table(rows))
print("p50/p99/p99.9: half a ping-pong round trip. stamped: the receiver's clock minus the sender's, one message a round trip.")
print("1→8: one poster, eight receiving processes (Foundation: eight observers); peak RSS from that run.")
print("× limit, % limit: against the raw socket of the row's own type (Wormhole (datagram) against the raw datagram socket); "
    + "the other mechanisms against the \(limit(of: nil).label).")
if let dbusSkipped { print("D-Bus: \(dbusSkipped)") }

// On each transport, a post to a stopped receiver against one to a running receiver, and how fast it catches
// up after SIGCONT.
struct StoppedReceiver {
    var running: Percentiles
    var stopped: Percentiles
    var spooledWhileRunning: Int
    var spooledWhileStopped: Int
    var drained: Bool
    var drainRate: Double
}
func stoppedReceiver(_ wormhole: WormholeWay, posts count: Int) -> StoppedReceiver? {
    var spooledBefore = wormhole.center.statistics.spooled
    let running = Percentiles(nanoseconds: wormhole.timedPosts(count))
    let spooledWhileRunning = wormhole.center.statistics.spooled - spooledBefore
    _ = wormhole.awaitFlood(seconds: 60)
    kill(wormhole.peerIdentifier, SIGSTOP)
    usleep(200_000)
    spooledBefore = wormhole.center.statistics.spooled
    let stopped = Percentiles(nanoseconds: wormhole.timedPosts(count))
    let spooledWhileStopped = wormhole.center.statistics.spooled - spooledBefore
    let resumed = monotonicNanoseconds()
    kill(wormhole.peerIdentifier, SIGCONT)
    let drained = wormhole.awaitFlood(seconds: 120)
    let drainRate = Double(count) / (Double(monotonicNanoseconds() - resumed) / 1e9)
    guard let running, let stopped else { return nil }
    return StoppedReceiver(
        running: running, stopped: stopped, spooledWhileRunning: spooledWhileRunning,
        spooledWhileStopped: spooledWhileStopped, drained: drained, drainRate: drainRate)
}
let stoppedCount = quick ? 2_000 : 20_000
let stoppedResults = wormholes.map { (transport: $0.socketType, result: stoppedReceiver($0, posts: stoppedCount)) }
print("\nWormhole post, no userInfo, \(stoppedCount) posts           p50        p99        p99.9")
for (transport, result) in stoppedResults {
    guard let result else {
        print("\(transport): not measured")
        continue
    }
    let name = "\(transport),".padding(toLength: 11, withPad: " ", startingAt: 0)
    print(name + String(format: "receiver running            %7.1f µs  %7.1f µs  %7.1f µs   (%d spooled)",
        result.running.p50, result.running.p99, result.running.p999, result.spooledWhileRunning))
    print(name + String(format: "receiver stopped (SIGSTOP)  %7.1f µs  %7.1f µs  %7.1f µs   (%d spooled)",
        result.stopped.p50, result.stopped.p99, result.stopped.p999, result.spooledWhileStopped))
    print(name + (result.drained
        ? String(format: "after SIGCONT, the receiver caught up at %.0f notifications/s", result.drainRate)
        : "the receiver did not catch up"))
}

// On each transport, the cost of a post as other listeners join the registry.
let growth = try transports.map {
    (transport: $0, costs: try RegistryGrowth.measure(folder: folder, posts: quick ? 2_000 : 20_000, transport: $0))
}
print("\nWormhole post, no userInfo, to one receiver, with other listeners registered for other names")
print("(datagram: posted \(WormholeWay.datagramChunk) at a time, fewer than its socket queues; seqpacket: 100 at a time)")
print("other listeners" + growth.map { "   \($0.transport) p50 / p99".padding(toLength: 30, withPad: " ", startingAt: 0) }.joined())
for listeners in RegistryGrowth.sizes {
    let cells = growth.map { entry in
        entry.costs.first { $0.listeners == listeners }.map { String(format: "   %7.2f µs / %7.2f µs    ", $0.cost.p50, $0.cost.p99) }
            ?? "   –".padding(toLength: 30, withPad: " ", startingAt: 0)
    }
    print(String(format: "%15d", listeners) + cells.joined())
}

// The targets, as ratios within this run: Wormhole on each transport against the raw socket of the same type.
let row = { (label: String, payload: String) in rows.first { $0.label == label && $0.payload == payload } }
func verdict(_ met: Bool?) -> String { met.map { $0 ? "met" : "missed" } ?? "not measured" }
var targets: [(String, String, Bool?)] = []
for wormhole in wormholes {
    let transport = wormhole.socketType
    let prefix = "\(wormhole.label): ", limitLabel = limit(of: transport).label
    func add(_ target: String, _ result: String, _ met: Bool?) { targets.append((prefix + target, result, met)) }
    let plain = row(wormhole.label, "no userInfo"), nested = row(wormhole.label, "3-key nested")
    let rawPlain = row(limitLabel, "no userInfo")
    let large = row(wormhole.label, "1 MiB Data")
    if let ratio = plain?.latencyRatio { add("p50, no userInfo, ≤ 1.5× the \(limitLabel)", String(format: "%.1f×", ratio), ratio <= 1.5) }
    if let ratio = nested?.latencyRatio { add("p50, 3-key, ≤ 2× the \(limitLabel)", String(format: "%.1f×", ratio), ratio <= 2) }
    if let ratio = large?.latencyRatio { add("p50, 1 MiB, ≤ 2× the \(limitLabel)", String(format: "%.1f×", ratio), ratio <= 2) }
    if let ratio = plain?.rateRatio {
        add("throughput, no userInfo, ≥ 90 % of the \(limitLabel)'s", String(format: "%.0f %%", ratio * 100), ratio >= 0.9)
    }
    if let rate = nested?.rate { add("throughput, 3-key, ≥ 300k/s", String(format: "%.0f/s", rate), rate >= 300_000) }
    if let ours = plain?.fanOut?.rate, let floor = rawPlain?.fanOut?.rate {
        add("fan-out 1→8 ≥ 50 % of the \(limitLabel)'s", String(format: "%.0f %%", 100 * ours / floor), ours >= floor / 2)
    }
    if let dbus, let theirs = row(dbus.label, "3-key nested"), let p50 = nested?.latency?.p50, let theirP50 = theirs.latency?.p50,
        let rate = nested?.rate, let theirRate = theirs.rate
    {
        add("p50 ≥ 5× lower than D-Bus (3-key)", String(format: "%.1f×", theirP50 / p50), theirP50 / p50 >= 5)
        add("throughput ≥ 5× D-Bus (3-key)", String(format: "%.1f×", rate / theirRate), rate / theirRate >= 5)
    }
    if let theirs = row(files.label, "3-key nested")?.latency?.p50, let p50 = nested?.latency?.p50 {
        add("p50 ≥ 10× lower than the file way (3-key)", String(format: "%.1f×", theirs / p50), theirs / p50 >= 10)
    }
    if let result = stoppedResults.first(where: { $0.transport == transport })?.result {
        let ratio = result.stopped.p99 / result.running.p99
        add("post to a stopped receiver, p99 ≤ 5× a normal post", String(format: "%.1f×", ratio), ratio <= 5)
    }
    if let costs = growth.first(where: { $0.transport == transport })?.costs, let first = costs.first?.cost.p50,
        let last = costs.last?.cost.p50, first > 0
    {
        let change = last / first - 1
        add("post cost flat (±20 %) from 1 to 256 listeners", String(format: "%+.0f %%", change * 100), abs(change) <= 0.2)
    }
}
// The observer kinds' targets: CPU time per notification against the raw socket.
let observerCosts = observerCostReport()
for result in observerCosts where result.label.contains("OperationQueue") || result.label.contains("main actor") {
    let target = result.label + ": CPU time ≤ 2× the raw socket's"
    guard let ratio = result.ratio else {
        targets.append((target, "–", nil))
        continue
    }
    targets.append((target, String(format: "%.2f×", ratio), ratio <= 2))
}
// The codec's targets, the same on both transports.
if let nested = codec["3-key nested"] {
    targets.append(("codec: 3-key encode + decode ≤ 2 µs", String(format: "%.2f µs", nested.posted), nested.posted <= 2))
    let ratio = nested.foundation / nested.posted
    targets.append(("codec: 3-key ≥ 100× faster than NSKeyedArchiver + NSKeyedUnarchiver", String(format: "%.0f×", ratio), ratio >= 100))
}
if let small = codec["[\"n\": 1]"] {
    targets.append(("codec: [\"n\": 1] encode + decode ≤ 0.7 µs", String(format: "%.2f µs", small.posted), small.posted <= 0.7))
}
print("\ntargets, as ratios within this run")
let targetWidth = (targets.map(\.0.count).max() ?? 0) + 2
for (target, result, met) in targets {
    print(target.padding(toLength: targetWidth, withPad: " ", startingAt: 0) + result.padding(toLength: 10, withPad: " ", startingAt: 0) + verdict(met))
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
    var document: [String: Any] = ["rows": rows.map(\.json), "quick": quick, "max_dgram_qlen": datagramQueueLength]
    document["targets"] = targets.map { ["target": $0.0, "result": $0.1, "met": $0.2 as Any] }
    // One entry a registry size, with each transport's figures under its name.
    document["registry_growth"] = RegistryGrowth.sizes.map { listeners in
        var entry: [String: Any] = ["other_listeners": listeners]
        for (transport, costs) in growth {
            guard let cost = costs.first(where: { $0.listeners == listeners })?.cost else { continue }
            entry[transport.rawValue] = ["post_p50_us": cost.p50, "post_p99_us": cost.p99]
        }
        return entry
    }
    var stoppedDocument: [String: Any] = [:]
    for case let (transport, result?) in stoppedResults {
        stoppedDocument[transport.rawValue] = [
            "running_p50_us": result.running.p50, "running_p99_us": result.running.p99, "running_spooled": result.spooledWhileRunning,
            "stopped_p50_us": result.stopped.p50, "stopped_p99_us": result.stopped.p99, "stopped_spooled": result.spooledWhileStopped,
            "drain_per_s": result.drainRate,
        ]
    }
    document["stopped_receiver"] = stoppedDocument
    // A figure not measured (the runs were disturbed) is null.
    document["observer_kinds"] = observerCosts.map { result -> [String: Any] in
        [
            "kind": result.label, "cpu_us_per_notification": result.microseconds ?? NSNull(), "x_raw": result.ratio ?? NSNull(),
            "x_matched": result.matchedRatio ?? NSNull(),
        ]
    }
    if let dbusSkipped { document["dbus"] = dbusSkipped }
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}
