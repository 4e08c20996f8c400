import Foundation
import Synchronization
import Wormhole
import WormholeTestSupport

/// One child process and the lines it prints, handed to `onLine` as they come.
final class Child: @unchecked Sendable {
    // Safe because `process` is only started and signalled from the harness's thread, and `killedByHarness`
    // is atomic.
    let process = Process()
    let killedByHarness = Atomic<Bool>(false)

    /// Starts this executable with `arguments`, its centers on `transport` (through WORMHOLE_TRANSPORT).
    init(_ arguments: [String], transport: GroupNotificationCenter.Transport, onLine: @escaping @Sendable (String) -> Void) throws {
        process.executableURL = Bundle.main.executableURL
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment[GroupNotificationCenter.Transport.environmentVariable] = transport.rawValue
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        readLines(from: output.fileHandleForReading, onLine)
    }

    var pid: Int32 { process.processIdentifier }

    func kill() {
        killedByHarness.store(true, ordering: .relaxed)
        Foundation.kill(pid, SIGKILL)
    }

    /// Whether it died of something the harness did not do.
    var crashed: Bool {
        guard !process.isRunning, !killedByHarness.load(ordering: .relaxed) else { return false }
        return process.terminationReason == .uncaughtSignal || process.terminationStatus != 0
    }
}

/// What the harness learns from its children.
struct Ledger {
    struct Post { let poster: Int; let sequence: Int; let start: UInt64; let end: UInt64; let failures: Int }
    struct Receiver {
        var registered: UInt64?
        var ended: UInt64?
        var killed = false
        var received = Set<Int64>()
        var last: [Int: Int] = [:]
        var duplicated = 0
        var outOfOrder = 0
        var corrupt = 0
    }

    var posts: [Post] = []
    var postersDone = 0
    var receivers: [Int: Receiver] = [:]
    var posterProgress: [Int: Int] = [:]
    /// What posters' reports said failed, by post.
    var failures: [Int64: String] = [:]

    static func key(_ poster: Int, _ sequence: Int) -> Int64 { Int64(poster) << 32 | Int64(sequence) }

    mutating func receiverLine(_ id: Int, _ line: String) {
        let fields = line.split(separator: " ")
        if fields.first == "READY", fields.count == 2 {
            receivers[id, default: Receiver()].registered = UInt64(fields[1])
            return
        }
        guard fields.count == 4, fields[0] == "R", let poster = Int(fields[1]), let sequence = Int(fields[2]) else {
            receivers[id, default: Receiver()].corrupt += 1
            return
        }
        // In place: a copy of the receiver would copy its whole set of received keys on every line, and a
        // receiver living through a long run reports hundreds of thousands.
        Self.record(poster, sequence, intact: fields[3] == "1", in: &receivers[id, default: Receiver()])
    }

    private static func record(_ poster: Int, _ sequence: Int, intact: Bool, in receiver: inout Receiver) {
        if !intact { receiver.corrupt += 1 }
        if !receiver.received.insert(key(poster, sequence)).inserted {
            receiver.duplicated += 1
        } else if let last = receiver.last[poster], sequence <= last {
            receiver.outOfOrder += 1
        }
        receiver.last[poster] = max(sequence, receiver.last[poster] ?? -1)
    }

    mutating func posterLine(_ id: Int, _ line: String) {
        let fields = line.split(separator: " ")
        if fields.first == "DONE" {
            postersDone += 1
            return
        }
        if fields.first == "F", fields.count > 2, let sequence = Int(fields[1]) {
            failures[Self.key(id, sequence)] = fields.dropFirst(2).joined(separator: " ")
            return
        }
        guard fields.count == 5, let sequence = Int(fields[1]), let start = UInt64(fields[2]), let end = UInt64(fields[3]),
            let failures = Int(fields[4])
        else { return }
        posts.append(Post(poster: id, sequence: sequence, start: start, end: end, failures: failures))
        posterProgress[id] = sequence
    }

    /// What receiver `id` was owed: posts that began after it registered and ended before it stopped.
    func owed(to id: Int) -> [Int64] {
        owedPosts(to: id).map { Self.key($0.poster, $0.sequence) }
    }

    private func owedPosts(to id: Int) -> [Post] {
        guard let receiver = receivers[id], !receiver.killed, let registered = receiver.registered else { return [] }
        return posts.filter { $0.start > registered && $0.end < (receiver.ended ?? .max) }
    }

    /// A line for each of the first `limit` posts receiver `id` was owed and did not report: when the post began
    /// after the receiver registered, what its poster's report said, and whether the receiver reported later
    /// posts of that poster (a hole, rather than a tail still on its way).
    func lostLines(of id: Int, limit: Int) -> [String] {
        guard let receiver = receivers[id], let registered = receiver.registered else { return [] }
        return owedPosts(to: id).lazy.filter { !receiver.received.contains(Self.key($0.poster, $0.sequence)) }.prefix(limit).map { post in
            let later = (receiver.last[post.poster] ?? -1) > post.sequence
            return "chaos: lost poster \(post.poster) sequence \(post.sequence) to receiver \(id): posted "
                + String(format: "%.3f", Double(post.start - registered) / 1e9) + " s after it registered, in "
                + String(format: "%.3f", Double(post.end - post.start) / 1e6) + " ms, \(post.failures) failures reported"
                + (failures[Self.key(post.poster, post.sequence)].map { " (\($0))" } ?? "") + "; "
                + (later ? "later posts of that poster arrived" : "nothing later of that poster arrived")
        }
    }
}

/// The ledger, shared with the threads that read the children's output.
final class SharedLedger: Sendable {
    private let ledger = Mutex(Ledger())
    func withLock<R>(_ body: (inout Ledger) -> R) -> R { ledger.withLock { body(&$0) } }
}

final class Harness {
    let posters: Int
    let receivers: Int
    let notifications: Int
    let seconds: Int
    var generator: SeededGenerator
    let ledger = SharedLedger()
    let container: String

    let forgetEvery: Int
    private var actions = (stops: 0, posterKills: 0, receiverKills: 0)

    let rate: Int
    /// The transport every child listens on.
    let transport: GroupNotificationCenter.Transport

    init(
        posters: Int, receivers: Int, notifications: Int, seconds: Int, seed: UInt64, forgetEvery: Int, rate: Int,
        transport: GroupNotificationCenter.Transport
    ) {
        self.transport = transport
        self.forgetEvery = forgetEvery
        self.rate = rate
        self.posters = max(1, posters)
        self.receivers = max(1, receivers)
        self.notifications = notifications
        self.seconds = seconds
        generator = SeededGenerator(seed: seed)
        let folder = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((folder + "wormhole-chaos-XXXXXX").utf8CString)
        container = mkdtemp(&template).map { String(cString: $0) } ?? folder + "wormhole-chaos-\(UUID().uuidString)"
    }

    private var nextReceiver = 0
    private var nextPoster = 0

    private func startReceiver() throws -> (Int, Child) {
        let id = nextReceiver
        nextReceiver += 1
        let ledger = self.ledger
        let child = try Child(["receiver", "--container", container, "--forget-every", "\(forgetEvery)"], transport: transport) { line in
            ledger.withLock { $0.receiverLine(id, line) }
        }
        return (id, child)
    }

    private func startPoster(first: Int, end: Int) throws -> (Int, Child) {
        let id = nextPoster
        nextPoster += 1
        let ledger = self.ledger
        let arguments = ["poster", "--container", container, "--id", "\(id)", "--first", "\(first)", "--end", "\(end)", "--rate", "\(rate)"]
        let child = try Child(arguments, transport: transport) { line in
            ledger.withLock { $0.posterLine(id, line) }
        }
        return (id, child)
    }

    private func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    func run() -> Int32 {
        defer { try? FileManager.default.removeItem(atPath: container) }
        var receiverChildren: [Int: Child] = [:]
        var posterChildren: [Int: (child: Child, first: Int, end: Int)] = [:]
        var allChildren: [Child] = []
        var stopped: [Int: Date] = [:]
        do {
            for _ in 0..<receivers {
                let (id, child) = try startReceiver()
                receiverChildren[id] = child
                allChildren.append(child)
            }
            guard waitUntil(20, { ledger.withLock { $0.receivers.values.filter { $0.registered != nil }.count } == receivers }) else {
                print("chaos: receivers did not start")
                return 2
            }
            let share = notifications / posters
            for index in 0..<posters {
                let first = share * index
                let end = index == posters - 1 ? notifications : first + share
                let (id, child) = try startPoster(first: first, end: end)
                posterChildren[id] = (child, first, end)
                allChildren.append(child)
            }

            let deadline = Date().addingTimeInterval(Double(seconds))
            while Date() < deadline, !posterChildren.isEmpty {
                usleep(UInt32.random(in: 50_000...400_000, using: &generator))
                // Resume receivers whose stop has lasted long enough.
                for (id, until) in stopped where until < Date() {
                    if let child = receiverChildren[id] { kill(child.pid, SIGCONT) }
                    stopped[id] = nil
                }
                // Forget posters that finished.
                for (id, entry) in posterChildren where !entry.child.process.isRunning && !entry.child.killedByHarness.load(ordering: .relaxed) {
                    posterChildren[id] = nil
                }
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<4:
                    guard let (id, child) = receiverChildren.filter({ stopped[$0.key] == nil }).randomElement(using: &generator) else { break }
                    kill(child.pid, SIGSTOP)
                    actions.stops += 1
                    stopped[id] = Date().addingTimeInterval(Double.random(in: 0.1...3, using: &generator))
                case 4..<6:
                    guard let (id, entry) = posterChildren.randomElement(using: &generator), entry.child.process.isRunning else { break }
                    entry.child.kill()
                    actions.posterKills += 1
                    entry.child.process.waitUntilExit()
                    posterChildren[id] = nil
                    // A new poster, under a new id, takes over the numbers the killed one had not finished.
                    let first = ledger.withLock { $0.posterProgress[id] }.map { $0 + 1 } ?? entry.first
                    if first < entry.end {
                        let (newID, child) = try startPoster(first: first, end: entry.end)
                        posterChildren[newID] = (child, first, entry.end)
                        allChildren.append(child)
                    }
                case 6..<8:
                    guard let (id, child) = receiverChildren.randomElement(using: &generator) else { break }
                    let now = DispatchTime.now().uptimeNanoseconds
                    ledger.withLock {
                        $0.receivers[id]?.killed = true
                        $0.receivers[id]?.ended = now
                    }
                    child.kill()
                    actions.receiverKills += 1
                    receiverChildren[id] = nil
                    stopped[id] = nil
                    let (newID, replacement) = try startReceiver()
                    receiverChildren[newID] = replacement
                    allChildren.append(replacement)
                default:
                    break
                }
            }
            // Let the posters finish, and every stopped receiver go on.
            for (id, _) in stopped {
                if let child = receiverChildren[id] { kill(child.pid, SIGCONT) }
            }
            _ = waitUntil(Double(seconds) + 120) { posterChildren.values.allSatisfy { !$0.child.process.isRunning } }
            for entry in posterChildren.values where entry.child.process.isRunning { entry.child.kill() }
            // Wait until every surviving receiver has what it is owed, or nothing has arrived for five seconds.
            // What each is owed is worked out again only when posts were added (the last lines of posters may
            // still be read): a long run has a million posts, and the readers of the children's output wait for
            // the ledger.
            var debts: [(id: Int, owed: [Int64])] = []
            var debtsCountedPosts = -1
            var lastTotal = -1
            var lastChange = Date()
            _ = waitUntil(120) {
                ledger.withLock { ledger in
                    let total = ledger.receivers.values.map(\.received.count).reduce(0, +)
                    if total != lastTotal {
                        lastTotal = total
                        lastChange = Date()
                    }
                    if Date().timeIntervalSince(lastChange) > 5 { return true }
                    if ledger.posts.count != debtsCountedPosts {
                        debtsCountedPosts = ledger.posts.count
                        debts = receiverChildren.keys.map { (id: $0, owed: ledger.owed(to: $0)) }
                    }
                    return debts.allSatisfy { debt in
                        let received = ledger.receivers[debt.id]?.received ?? []
                        return received.count >= debt.owed.count && debt.owed.allSatisfy { received.contains($0) }
                    }
                }
            }
        } catch {
            print("chaos: \(error)")
            allChildren.forEach { $0.kill() }
            return 2
        }
        let crashes = allChildren.filter(\.crashed).count
        allChildren.forEach { $0.kill() }
        let summary = ledger.withLock { ledger -> (posted: Int, lost: Int, duplicated: Int, outOfOrder: Int, corrupt: Int) in
            var lost = 0
            var owed = 0
            for id in receiverChildren.keys {
                let received = ledger.receivers[id]?.received ?? []
                let debts = ledger.owed(to: id)
                owed += debts.count
                lost += debts.filter { !received.contains($0) }.count
                ledger.lostLines(of: id, limit: 10).forEach { print($0) }
            }
            print("chaos: \(actions.stops) receiver stops, \(actions.posterKills) poster kills, \(actions.receiverKills) receiver kills; "
                + "\(owed) deliveries owed to the receivers alive at the end, \(ledger.receivers.values.map(\.received.count).reduce(0, +)) reported")
            let all = ledger.receivers.values
            return (ledger.posts.count, lost, all.map(\.duplicated).reduce(0, +), all.map(\.outOfOrder).reduce(0, +),
                    all.map(\.corrupt).reduce(0, +))
        }
        // The transport comes last, after the counts, so that the line still begins "chaos: N posters" and each
        // comma-separated count keeps its place.
        print("chaos: \(posters) posters, \(receivers) receivers, \(summary.posted) posted, \(summary.lost) lost, "
            + "\(summary.duplicated) duplicated, \(summary.outOfOrder) out of order, \(summary.corrupt) corrupt, \(crashes) crashes, "
            + "transport \(transport)")
        return summary.lost + summary.duplicated + summary.outOfOrder + summary.corrupt + crashes == 0 ? 0 : 1
    }
}
