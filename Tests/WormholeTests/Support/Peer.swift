import Foundation
import Synchronization
import Testing
import WormholeTestSupport

/// Another process: the `wormhole` tool or the test peer, with its output lines collected as they come.
final class Peer: Sendable {
    struct Timeout: Error, CustomStringConvertible {
        let description: String
    }

    /// Lines read from one of the process's outputs.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    let process: Process
    /// How many of the two output pipes have reached their end.
    private let ended = Atomic<Int>(0)
    private let lines = Lines()
    private let errors = Lines()
    private let changed = NSCondition()

    /// The folder that holds the test bundle and the package's executables.
    static let productsDirectory: URL = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        while url.path != "/", !FileManager.default.fileExists(atPath: url.appendingPathComponent("wormhole").path) {
            url.deleteLastPathComponent()
        }
        return url
    }()

    /// Starts `executable` (`wormhole`, `wormhole-test-peer`, `wormhole-chaos`, or with `absolute` a full path)
    /// with `arguments`.
    init(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:], absolute: Bool = false) throws {
        process = Process()
        process.executableURL = absolute
            ? URL(fileURLWithPath: executable) : Self.productsDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["WORMHOLE_CONTAINER_ROOT"] = nil
        environment.merge(extra) { $1 }
        process.environment = environment
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        try process.run()
        collect(output.fileHandleForReading, into: lines)
        collect(errorOutput.fileHandleForReading, into: errors)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
    }

    var pid: Int32 { process.processIdentifier }
    var output: [String] { lines.all }
    var errorOutput: [String] { errors.all }

    /// Waits until the output holds `count` lines, or fails the test after `seconds`.
    @discardableResult
    func waitForLines(_ count: Int, timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> [String]
    {
        try waitFor(timeout: seconds, "\(count) lines", sourceLocation) {
            let current = lines.all
            return current.count >= count ? current : nil
        }
    }

    /// Waits until `count` lines of standard error contain `text`.
    func waitForError(containing text: String, count: Int = 1, timeout seconds: Double = 20,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try waitFor(timeout: seconds, "\(count) stderr lines containing \(text)", sourceLocation) {
            errors.all.count { $0.contains(text) } >= count ? true : nil
        }
    }

    /// The output lines parsed as JSON objects.
    func jsonLines() -> [[String: Any]] {
        output.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// Waits for the process to exit and returns its status, or fails the test after `seconds`.
    @discardableResult
    func waitForExit(timeout seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int32 {
        let exited = DispatchSemaphore(value: 0)
        let process = self.process
        // A thread of its own: a blocked thread of Dispatch's global queues, which the system grows slowly, would
        // keep other tests' waits queued behind it.
        Thread {
            process.waitUntilExit()
            exited.signal()
        }.start()
        guard exited.wait(timeout: .now() + seconds) == .success else {
            Issue.record("process \(pid) did not exit within \(seconds) s; output: \(output), errors: \(errorOutput)", sourceLocation: sourceLocation)
            throw Timeout(description: "exit")
        }
        // Everything it printed is read once both pipes end; a child it left behind may hold them open, so
        // this wait is bounded too.
        _ = try? waitFor(timeout: 5, "the end of its output", sourceLocation, recording: false) { () -> Bool? in
            ended.load(ordering: .relaxed) == 2 ? true : nil
        }
        return process.terminationStatus
    }

    func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Stops the process with SIGSTOP and waits until the system reports it stopped.
    func suspend() throws {
        signal(SIGSTOP)
        try waitUntilStopped()
    }

    /// Whether the system reports the process stopped now.
    var isStopped: Bool {
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].dropFirst(2).first == "T"
    }

    /// Waits until the system reports the process stopped (it stopped itself, or was sent SIGSTOP).
    func waitUntilStopped(timeout seconds: Double = 5, sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try waitFor(timeout: seconds, "process stopped", sourceLocation) { () -> Bool? in
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            guard let close = stat.lastIndex(of: ")") else { return nil }
            return stat[close...].dropFirst(2).first == "T" ? true : nil
        }
    }

    private func waitFor<R>(
        timeout seconds: Double, _ what: String, _ location: SourceLocation, recording: Bool = true, _ check: () -> R?
    ) throws -> R {
        let deadline = Date().addingTimeInterval(seconds)
        changed.lock()
        defer { changed.unlock() }
        while true {
            if let result = check() { return result }
            if Date() >= deadline {
                guard recording else { throw Timeout(description: what) }
                Issue.record(
                    "timed out after \(seconds) s waiting for \(what); output: \(output.suffix(5)), errors: \(errorOutput.suffix(5))",
                    sourceLocation: location)
                throw Timeout(description: what)
            }
            // Output wakes this at once; the cap only serves checks of /proc, which nothing signals.
            _ = changed.wait(until: min(deadline, Date().addingTimeInterval(0.1)))
        }
    }

    private func collect(_ handle: FileHandle, into store: Lines) {
        let changed = self.changed
        // Weak: a reader holding the peer would keep its deinit, which kills a process still running, from
        // ever running.
        readLines(from: handle, onEnd: { [weak self] in
            self?.ended.add(1, ordering: .relaxed)
            changed.lock()
            changed.broadcast()
            changed.unlock()
        }) { line in
            store.append(line)
            changed.lock()
            changed.broadcast()
            changed.unlock()
        }
    }
}
