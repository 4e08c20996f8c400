// Clocks, percentiles, memory and waiting: what every measurement in the benchmark shares.
#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif
import Foundation
import Synchronization
import Wormhole

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so a timestamp written by one
/// process can be subtracted from the time another reads it.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// How many datagrams an AF_UNIX datagram socket queues before senders wait or fail with EAGAIN:
/// net.unix.max_dgram_qlen on Linux, 10 unless changed.
let datagramQueueLength: Int = {
    let text = (try? String(contentsOfFile: "/proc/sys/net/unix/max_dgram_qlen", encoding: .utf8)) ?? ""
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 10
}()

/// Makes standard output line-buffered, so that progress shows as it happens, also through a pipe.
func lineBufferedOutput() {
    setvbuf(stdout, nil, _IOLBF, 0)
}

/// Runs `body` `count` times, one run every `interval` nanoseconds.
func paced(_ count: Int, every interval: UInt64, _ body: () -> Void) {
    var next = monotonicNanoseconds()
    for _ in 0..<count {
        sleep(until: next)
        next += interval
        body()
    }
}

/// Runs this process, and the processes it starts, on `cpu` alone. Glibc's module does not export
/// sched_setaffinity, so it is looked up at run time.
func pinToCPU(_ cpu: Int32) {
    #if canImport(Glibc)
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "sched_setaffinity") else { return }
    var set = cpu_set_t()
    withUnsafeMutableBytes(of: &set) { bytes in
        bytes[Int(cpu) / 8] |= UInt8(1) << (UInt8(cpu) % 8)
    }
    let result = withUnsafeBytes(of: &set) { unsafeBitCast(symbol, to: SetAffinity.self)(0, $0.count, $0.baseAddress!) }
    if result != 0 { print("cannot run on CPU \(cpu) alone") }
    #endif
}

/// Sleeps until `deadline` on the monotonic clock (a sleep, not a spin, so the receiver keeps its core).
func sleep(until deadline: UInt64) {
    #if canImport(Glibc)
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
    #else
    // No absolute sleep on Darwin: sleep for what is left.
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let current = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    guard deadline > current else { return }
    var time = timespec(tv_sec: Int((deadline - current) / 1_000_000_000), tv_nsec: Int((deadline - current) % 1_000_000_000))
    while nanosleep(&time, &time) == -1 && errno == EINTR {}
    #endif
}

/// This process's peak resident set size, in KiB.
func peakResidentKiB() -> Int {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage.ru_maxrss
}

/// p50, p99 and p99.9 of a set of samples, in microseconds.
struct Percentiles {
    var p50: Double
    var p99: Double
    var p999: Double
    var count: Int

    init?(nanoseconds samples: [UInt64]) {
        guard let values = Self.microseconds(samples, at: [0.5, 0.99, 0.999]) else { return nil }
        (p50, p99, p999, count) = (values[0], values[1], values[2], samples.count)
    }

    /// The samples (nanoseconds) at each of `fractions`, in microseconds; nil for no samples.
    static func microseconds(_ samples: [UInt64], at fractions: [Double]) -> [Double]? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        return fractions.map { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * $0))]) / 1000 }
    }

    /// Three percentiles in 24 bytes, for a peer to send back what it measured.
    var bytes: [UInt8] {
        [p50, p99, p999].flatMap { value in withUnsafeBytes(of: UInt64(value * 1000).littleEndian) { Array($0) } }
    }

    init?(bytes: [UInt8], count: Int) {
        guard bytes.count >= 24 else { return nil }
        func at(_ index: Int) -> Double {
            Double(bytes[(index * 8)..<(index * 8 + 8)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) / 1000
        }
        (p50, p99, p999, self.count) = (at(0), at(1), at(2), count)
    }
}

/// A number in eight little-endian bytes, and back.
func littleEndianBytes(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
func littleEndianValue(_ bytes: some Collection<UInt8>) -> UInt64 {
    bytes.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
}

/// Collects one-way latencies measured on arrival (now minus the stamp the sender wrote) until `total` came.
struct StampCollector {
    private var samples: [UInt64] = []

    /// Adds the sample of a message stamped at `stamp`; returns the percentiles once `total` arrived.
    mutating func add(stamp: UInt64, total: Int) -> Percentiles? {
        let now = monotonicNanoseconds()
        samples.append(now > stamp ? now - stamp : 0)
        guard samples.count >= total else { return nil }
        defer { samples = [] }
        return Percentiles(nanoseconds: samples)
    }
}

/// Counts arrivals and lets the main thread wait for a given total, with a timeout.
final class Arrivals: Sendable {
    private let state = Mutex<(count: Int, last: [String: Int])>((0, [:]))
    private let condition = NSCondition()

    /// Counts one arrival, keeping the whole-number values of its userInfo.
    func add(_ userInfo: [AnyHashable: Any]? = nil) {
        var numbers: [String: Int] = [:]
        for case let (key as String, value as Int) in userInfo ?? [:] { numbers[key] = value }
        state.withLock { $0 = ($0.count + 1, numbers) }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `total` arrived; returns the numbers of the last arrival's userInfo, nil on timeout.
    @discardableResult
    func wait(until total: Int, seconds: Double) -> [String: Int]? {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (count, last) = state.withLock { ($0.count, $0.last) }
            if count >= total { return last }
            if !condition.wait(until: deadline) { return nil }
        }
    }
}

/// The value after `name` on the command line.
func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// The `--container` a role was started with; the process ends when it is missing or empty, which would make the
/// current folder the container.
func containerOption() -> String {
    guard let container = option("--container"), !container.isEmpty else {
        FileHandle.standardError.write(Data("wormhole-bench: \(CommandLine.arguments.dropFirst().first ?? "") needs --container DIR\n".utf8))
        exit(2)
    }
    return container
}

/// The transport `--transport` names, for the processes the benchmark starts; nil when it names none.
func transportOption() -> Transport? {
    option("--transport").flatMap(Transport.init(rawValue:))
}

/// Ends this process as soon as the process that started it is gone.
func exitWithParent() {
    let parent = getppid()
    Thread.detachNewThread {
        while getppid() == parent { usleep(200_000) }
        exit(0)
    }
}

/// Ends a process the benchmark started. SIGKILL, because a signal mask inherited from whoever started the
/// benchmark (a test runner, say) may block SIGTERM.
func stopProcess(_ process: Process) {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
}

/// Starts this executable again with `arguments` and this process's environment, through posix_spawn, for a
/// caller that waits for it with waitpid(2), so that its CPU time counts in the caller's RUSAGE_CHILDREN.
/// Foundation's `Process` fails under valgrind (it closes the descriptors valgrind keeps for itself), and its
/// `waitUntilExit()` may return before the child was reaped: a child never reaped counts nowhere.
func spawnSelfChild(_ arguments: [String]) throws -> pid_t {
    guard let path = Bundle.main.executableURL?.path else { throw BenchError("no executable path") }
    var pid: pid_t = 0
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let result = posix_spawn(&pid, path, nil, nil, argv, environ)
    guard result == 0 else { throw BenchError("cannot start \(path): \(result)") }
    return pid
}

/// Starts this executable again in another role. With a `transport`, the centers it and the processes it
/// starts open without naming one listen on that transport (WORMHOLE_TRANSPORT in their environment).
func spawnSelf(_ arguments: [String], output: FileHandle? = FileHandle.nullDevice, transport: Transport? = nil) throws -> Process {
    let process = Process()
    process.executableURL = Bundle.main.executableURL
    process.arguments = arguments
    if let transport {
        var environment = ProcessInfo.processInfo.environment
        environment[Transport.environmentVariable] = transport.rawValue
        process.environment = environment
    }
    if let output { process.standardOutput = output }
    try process.run()
    return process
}
