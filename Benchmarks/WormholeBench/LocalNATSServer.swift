// The NATS server of the bridge rows: nats-server with JetStream on a free loopback port, its store in a temporary
// folder. A `nats-guard` process of the benchmark's own starts it and kills it as soon as its standard input, a
// pipe from the benchmark, reaches its end: when the benchmark stops it, and also when the benchmark is killed,
// since the kernel closes the pipe then. A server started directly would outlive a benchmark killed by a test
// runner, with its store.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

final class LocalNATSServer {
    /// Where `nats-server` is: found on PATH, or where Debian puts it; nil when it is not installed.
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"]
        return folders.map { $0 + "/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// What the benchmark says when it cannot measure the bridge.
    static let missing = "nats-server is not installed (apt-get install nats-server): the bridge rows need one"

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    /// The version it says in its log, e.g. "2.9.10".
    let version: String
    private let guardProcess: Process
    private let input: Pipe

    /// Starts a server whose configuration, log and store go in `folder`; returns once it is ready.
    /// - Throws: ``BenchError`` when nats-server is missing or did not get ready within 30 seconds.
    init(folder: String) throws {
        guard let executable = Self.executable else { throw BenchError(Self.missing) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The guard's standard input: a pipe whose writing end this process holds until stop().
        let input = Pipe()
        let output = Pipe()
        let process = Process()
        process.executableURL = Bundle.main.executableURL
        process.arguments = ["nats-guard", "--folder", folder, "--server", executable]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        guard let line = Self.readLine(output), case let fields = line.split(separator: " "), fields.count == 2,
            let port = Int(fields[0])
        else {
            input.fileHandleForWriting.closeFile()
            process.waitUntilExit()
            throw BenchError("nats-server did not start (its log: \(folder)/nats.log)")
        }
        self.input = input
        guardProcess = process
        self.port = port
        version = String(fields[1])
    }

    private var stopped = false

    /// Stops the server and waits for it (at most 10 seconds). Calling it again does nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        input.fileHandleForWriting.closeFile()
        let deadline = Date().addingTimeInterval(10)
        while guardProcess.isRunning, Date() < deadline { usleep(10_000) }
        stopProcess(guardProcess)
    }

    private static func readLine(_ pipe: Pipe) -> String? {
        var line = [UInt8]()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if first == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(first)
        }
    }

    // MARK: The guard

    /// `nats-guard`: starts `server` with JetStream on a free port of 127.0.0.1 (`port: -1`), its store under
    /// `folder`; prints "PORT VERSION" once it is ready; kills it when standard input ends, and exits. Exits 1
    /// when it did not get ready within 30 seconds.
    static func guardServer(folder: String, server: String) throws -> Never {
        let log = folder + "/nats.log"
        let config = "host: 127.0.0.1\nport: -1\njetstream { store_dir: \"\(folder)/js\" }\n"
        try config.write(toFile: folder + "/nats.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: server)
        process.arguments = ["-c", folder + "/nats.conf", "-l", log]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var ready: (port: String, version: String)?
        while ready == nil, Date() < deadline, process.isRunning {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("Server is ready"), let port = text.range(of: "client connections on 127.0.0.1:") {
                let version = text.range(of: "Version:").map {
                    text[$0.upperBound...].drop { $0 == " " }.prefix { !$0.isWhitespace }
                }
                ready = (String(text[port.upperBound...].prefix { $0.isNumber }), String(version ?? "unknown"))
            } else {
                usleep(20_000)
            }
        }
        guard let ready else {
            stopProcess(process)
            exit(1)
        }
        FileHandle.standardOutput.write(Data("\(ready.port) \(ready.version)\n".utf8))
        // Until the benchmark closes its end, or is gone.
        while !FileHandle.standardInput.readData(ofLength: 4096).isEmpty {}
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        exit(0)
    }
}
