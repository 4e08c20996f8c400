// What a notification costs in CPU time with each kind of observer, against the raw socket doing the same
// ping-pong: both sides of a round trip observe with that kind (the pong's observer posts the next ping, the
// ping's observer posts the pong), so that each notification pays the kind's hop once.
//
// Each measurement is a process of its own (`observer-run`, `raw-run`) that starts its peer, runs its round
// trips, and waits for the peer to end: the benchmark reads both processes' CPU time (user + system) from
// getrusage(RUSAGE_CHILDREN) once it has waited for the run. The fastest of several long runs minus the fastest
// of as many short ones, divided by the difference in notifications, leaves out starting and stopping; a figure
// that comes out not positive (the runs were disturbed) is reported as not measured. Run with `--cpu N` to keep
// both processes on one CPU, so that every hop is a wake-up on it.
//
// Instructions per notification, by hand: a release build, both processes of one kind under callgrind on one CPU,
//     WORMHOLE_BENCH_RUN_LOOP=1 taskset -c 0 valgrind --tool=callgrind --trace-children=yes \
//         .build/release/wormhole-bench observer-run --container DIR --kind KIND --rounds N
// then both processes' `summary:` totals summed, for N = 1,200 minus N = 200, divided by 2,000 notifications.
import Foundation
import Synchronization
import Wormhole

enum ObserverCost {
    /// Where an observer's block runs.
    enum Kind: String, CaseIterable {
        case receiveThread = "receive-thread"
        case operationQueue = "operation-queue"
        case mainActor = "main-actor"
        case sequence = "async-sequence"

        var label: String {
            switch self {
            case .receiveThread: "receive thread (queue: nil)"
            case .operationQueue: "OperationQueue"
            case .mainActor: "main actor (no queue:)"
            case .sequence: "notifications(named:)"
            }
        }
    }

    /// One row: the kind, CPU µs per notification, and that against the raw socket, and for a Wormhole row
    /// against its matched raw row (RawHop: the raw socket handing each message to the same place); nil where the
    /// runs were disturbed (the long runs took no more CPU than the short ones), so nothing is measured.
    struct Result {
        let label: String
        let microseconds: Double?
        let ratio: Double?
        var matchedRatio: Double? = nil
    }

    /// Round trips of a short run and of a long one; `--quick` takes a tenth.
    static let shortRounds = 2_000
    static let longRounds = 12_000

    /// Measures the raw socket of `transport` and each kind over it, leaving out a kind whose run failed (and all,
    /// if the raw socket's did).
    static func measure(folder: String, runs: Int, quick: Bool, transport: Transport = .sequencedPacket) -> [Result] {
        let (shortRounds, longRounds) = quick ? (Self.shortRounds / 10, Self.longRounds / 10) : (Self.shortRounds, Self.longRounds)
        // The fastest short run and the fastest long run, each the best of `runs`: the difference of one pair would
        // take a short run that something else slowed for the best, and could come out negative. Nil when a run
        // failed; .some(nil) when the figure is not positive.
        func perNotification(_ arguments: (Int) -> [String]) -> Double?? {
            var (short, long) = (Double.infinity, Double.infinity)
            for _ in 0..<runs {
                guard let shortRun = cpuSeconds(arguments(shortRounds), transport),
                    let longRun = cpuSeconds(arguments(longRounds), transport)
                else { return nil }
                (short, long) = (min(short, shortRun), min(long, longRun))
            }
            // Two notifications a round trip.
            let microseconds = (long - short) / Double(2 * (longRounds - shortRounds)) * 1e6
            return .some(microseconds > 0 ? microseconds : nil)
        }
        var index = 0
        func place() -> String {
            index += 1
            return folder + "/observer-cost-\(index)"
        }
        let rawRun = { (rounds: Int) in ["raw-run", "--path", place() + ".socket", "--rounds", "\(rounds)", "--transport", transport.rawValue] }
        guard let raw = perNotification(rawRun) else { return [] }
        var results = [Result(label: "raw \(transport) socket", microseconds: raw, ratio: raw.map { _ in 1 })]
        // The raw socket again, each side waiting in poll(2) before its read as a sequenced-packet listener does:
        // the part of Wormhole's cost that is the wait's, not its own code's. A datagram listener waits in its read.
        if transport == .sequencedPacket, let polled = perNotification({ rawRun($0) + ["--polled"] }) {
            let ratio = polled.flatMap { cost in raw.map { cost / $0 } }
            results.append(Result(label: "raw seqpacket socket, polled before each read", microseconds: polled, ratio: ratio))
        }
        for kind in Kind.allCases {
            // Its matched floor first, over sequenced packets: the raw socket handing each message to the same place.
            var matched: Double?
            if transport == .sequencedPacket,
                let hop = perNotification({ ["raw-hop-run", "--path", place() + ".socket", "--kind", kind.rawValue, "--rounds", "\($0)"] })
            {
                matched = hop
                let ratio = hop.flatMap { cost in raw.map { cost / $0 } }
                results.append(Result(label: "raw polled, to " + kind.label, microseconds: hop, ratio: ratio))
            }
            guard let cost = perNotification({ ["observer-run", "--container", place(), "--kind", kind.rawValue, "--rounds", "\($0)"] })
            else { continue }
            let ratio = cost.flatMap { cost in raw.map { cost / $0 } }
            let matchedRatio = cost.flatMap { cost in matched.map { cost / $0 } }
            results.append(Result(label: "Wormhole, " + kind.label, microseconds: cost, ratio: ratio, matchedRatio: matchedRatio))
        }
        return results
    }

    /// The CPU seconds (user + system) of a run of this executable with `arguments` and of what it started.
    private static func cpuSeconds(_ arguments: [String], _ transport: Transport) -> Double? {
        let before = childrenSeconds()
        guard let process = try? spawnSelf(arguments, transport: transport) else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return childrenSeconds() - before
    }

    private static func childrenSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        #else
        getrusage(RUSAGE_CHILDREN, &usage)
        #endif
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    // MARK: The runs

    /// `raw-run`: `rounds` round trips on the raw socket of `transport`, no payload, each side waiting in poll(2)
    /// before its reads if `polled` (sequenced packets); then its peer is stopped and waited for.
    static func rawRun(path: String, rounds: Int, polled: Bool, transport: Transport) throws -> Never {
        try FileManager.default.createDirectory(atPath: path + ".d", withIntermediateDirectories: true)
        let raw = try RawSocket(folder: path + ".d", transport: transport, polled: polled)
        let done = raw.pingPong(Payload.all[0], rounds: rounds).count == rounds
        raw.finish()
        exit(done ? 0 : 1)
    }

    /// `observer-run`: starts an `observer-echo` of `kind`, then runs `rounds` round trips, each ping posted by
    /// the observer of the pong before it; then stops the echo and waits for it.
    @MainActor static func run(container: String, kind: Kind, rounds: Int) throws -> Never {
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        let started = Mutex<pid_t?>(nil)
        let count = Mutex(0)
        let finish: @Sendable () -> Void = {
            DispatchQueue.global().async {
                guard let echo = started.withLock({ $0 }) else { exit(1) }
                // The echo ends itself, so that a profiler it runs under writes its counts.
                center.post(name: .init("quit"), object: nil, userInfo: nil)
                var status: Int32 = 0
                exit(waitpid(echo, &status, 0) == echo ? 0 : 1)
            }
        }
        observe("pong", on: center, kind: kind) { _ in
            let sent = count.withLock { count in
                count += 1
                return count
            }
            if sent <= rounds {
                center.post(name: .init("ping"), object: nil, userInfo: nil)
            } else if sent == rounds + 1 {
                finish()
            }
        }
        // The echo says it is ready with a first pong, which starts the loop.
        let echo = try spawnSelfChild(["observer-echo", "--container", container, "--kind", kind.rawValue])
        started.withLock { $0 = echo }
        // Bounded, also under valgrind, which slows both processes about 50 times.
        DispatchQueue.global().asyncAfter(deadline: .now() + 600) { exit(1) }
        serve(kind)
    }

    /// `observer-echo`: answers each ping with a pong, from an observer of `kind`; posts a first pong when ready.
    @MainActor static func echo(container: String, kind: Kind) throws -> Never {
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        observe("ping", on: center, kind: kind) { _ in
            center.post(name: .init("pong"), object: nil, userInfo: nil)
        }
        center.addObserver(forName: .init("quit"), object: nil, queue: nil) { _ in exit(0) }
        // The run's observer is registered before it starts this process.
        center.post(name: .init("pong"), object: nil, userInfo: nil)
        serve(kind)
    }

    /// Runs the main queue for a main-actor observer, else sleeps. With `--run-loop` (in the environment
    /// variable WORMHOLE_BENCH_RUN_LOOP, so that the echo sees it too), through `RunLoop.main.run()`, as an app's
    /// event loop does, and as valgrind needs: it does not survive `dispatchMain()`.
    private static func serve(_ kind: Kind) -> Never {
        guard kind == .mainActor else { while true { sleep(1000) } }
        if ProcessInfo.processInfo.environment["WORMHOLE_BENCH_RUN_LOOP"] != nil { RunLoop.main.run() }
        dispatchMain()
    }

    /// Observes `name` with an observer of `kind` that calls `body`.
    @MainActor private static func observe(
        _ name: String, on center: GroupNotificationCenter, kind: Kind, _ body: @escaping @Sendable (Notification) -> Void
    ) {
        switch kind {
        case .receiveThread:
            center.addObserver(forName: .init(name), object: nil, queue: nil, using: body)
        case .operationQueue:
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            center.addObserver(forName: .init(name), object: nil, queue: queue, using: body)
        case .mainActor:
            // Formed here, on the main actor: the block runs there.
            center.addObserver(forName: .init(name), object: nil) { note in
                MainActor.assertIsolated()
                body(note)
            }
        case .sequence:
            let notes = center.notifications(named: .init(name))
            Task.detached {
                for await note in notes { body(note) }
            }
        }
    }
}
