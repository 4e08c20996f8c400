import Foundation
import Synchronization
import WormholeBridge

/// A real `nats-server` with JetStream for one test: started on a free loopback port with its store in a
/// temporary folder, killed, stopped (SIGSTOP) and started again on the same port with the same store.
final class NATSServer: Sendable {
    /// Where `nats-server` is: found on PATH, or where Debian puts it.
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"]
        return folders.map { $0 + "/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static var isAvailable: Bool { executable != nil }
    /// What a skipped test says.
    static let missing = "nats-server is not installed: apt-get install nats-server (the bridge's tests start their own servers)"

    let folder = TemporaryContainer("nats")
    private let maximumPayload: Int?
    private let token: String?
    /// More of its configuration: a cluster's.
    private let extra: String
    private let state: Mutex<(process: Process?, port: Int)>

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts a server; `maximumPayload` sets its `max_payload`, `token` makes it ask for that token.
    init(maximumPayload: Int? = nil, token: String? = nil, port: Int = -1, extra: String = "") async throws {
        self.maximumPayload = maximumPayload
        self.token = token
        self.extra = extra
        state = Mutex((nil, port))
        try await start()
    }

    deinit {
        kill()
    }

    var port: Int { state.withLock { $0.port } }
    /// The address a bridge connects to, with the token when the server asks for one.
    var address: NATSServerAddress { NATSServerAddress(host: "127.0.0.1", port: UInt16(port), token: token) }
    var url: String { "nats://\(token.map { $0 + "@" } ?? "")127.0.0.1:\(port)" }

    /// Starts the server (again, on the port it had, with the store it had), and returns once it says it is
    /// ready; does nothing while it runs. (A second process would fail on the port, and the first, no longer
    /// known, would outlive the test.)
    func start() async throws {
        guard let executable = Self.executable else { throw Failure(description: Self.missing) }
        guard !isRunning else { return }
        let port = self.port
        let log = folder.path + "/log-\(UUID().uuidString)"
        var config = "host: 127.0.0.1\nport: \(port)\njetstream { store_dir: \"\(folder.path)/js\" }\n"
        if let maximumPayload { config += "max_payload: \(maximumPayload)\n" }
        if let token { config += "authorization { token: \"\(token)\" }\n" }
        config += extra
        try config.write(toFile: folder.path + "/nats.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", folder.path + "/nats.conf", "-l", log]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        state.withLock { $0.process = process }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("Server is ready") {
                if port < 0, let range = text.range(of: "client connections on 127.0.0.1:") {
                    let digits = text[range.upperBound...].prefix { $0.isNumber }
                    state.withLock { $0.port = Int(digits) ?? -1 }
                }
                return
            }
            guard process.isRunning else { throw Failure(description: "nats-server exited: \(text)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Failure(description: "nats-server did not get ready in 30 s")
    }

    /// Whether it runs now.
    var isRunning: Bool { state.withLock { $0.process?.isRunning ?? false } }

    /// The name it goes by in its cluster, from its log.
    var log: String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix("log-") }.compactMap { try? String(contentsOfFile: folder.path + "/" + $0, encoding: .utf8) }
            .joined()
    }

    /// Kills the server at once (SIGKILL); its store stays for the next start.
    func kill() {
        guard let process = state.withLock({ state in defer { state.process = nil }; return state.process }) else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) the server: a server that stops answering.
    func pause(_ paused: Bool) {
        guard let process = state.withLock({ $0.process }) else { return }
        Foundation.kill(process.processIdentifier, paused ? SIGSTOP : SIGCONT)
    }
}

/// Three servers on loopback ports, one cluster with JetStream: streams kept by all three, a leader among them.
final class NATSCluster: Sendable {
    let servers: [NATSServer]

    init() async throws {
        // Ports picked at random and tried: a pick another process holds fails to start, and another is tried.
        var lastError: (any Error)?
        for _ in 0..<5 {
            let base = Int.random(in: 20_000...59_000)
            let routes = (0..<3).map { "\"nats-route://127.0.0.1:\(base + 10 + $0)\"" }.joined(separator: ", ")
            var started: [NATSServer] = []
            do {
                for index in 0..<3 {
                    let extra = """
                        server_name: s\(index)
                        cluster { name: wormhole, host: 127.0.0.1, port: \(base + 10 + index), routes: [\(routes)] }

                        """
                    started.append(try await NATSServer(port: base + index, extra: extra))
                }
                servers = started
                return
            } catch {
                for server in started { server.kill() }
                lastError = error
            }
        }
        throw lastError ?? NATSServer.Failure(description: "no ports for a cluster")
    }

    /// The index of the server that leads the stream `stream`, as the servers' logs last said, if any.
    func index(named name: String) -> Int? { Int(name.dropFirst()) }
}
