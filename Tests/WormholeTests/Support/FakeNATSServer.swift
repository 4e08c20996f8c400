import Foundation
import Synchronization
import WormholeBridge

#if canImport(Glibc)
import Glibc
#endif

/// A NATS server that is not one: a TCP listener on a free loopback port whose every connection runs the script a
/// test gives, on a thread of its own, to play a server that answers garbage, stalls, floods or lies. A script
/// reads what the bridge sends op by op (``Client/next(timeout:)``) and writes whatever it likes; ``Client``'s
/// helpers play the well-behaved parts (the handshake, a JetStream that stores and hands over) so that a script
/// only writes the part that misbehaves.
final class FakeNATSServer: Sendable {
    let port: UInt16
    private let listening: Int32
    private let shared = Shared()

    /// What the accepting thread shares with the server.
    private final class Shared: Sendable {
        let accepted = Mutex<[ContinuousClock.Instant]>([])
        let clients = Mutex<[Client]>([])
        let stopped = Atomic<Bool>(false)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The INFO a well-behaved server of Debian's version sends, with `fields` added or replaced (raw JSON
    /// members, such as `"max_payload":0`).
    static func info(_ fields: String = "") -> String {
        var members = [
            "\"server_id\":\"FAKE\"", "\"version\":\"2.9.10\"", "\"proto\":1", "\"headers\":true", "\"jetstream\":true",
        ]
        if !fields.isEmpty { members.append(fields) }
        if !fields.contains("max_payload") { members.append("\"max_payload\":1048576") }
        return "INFO {" + members.joined(separator: ",") + "}\r\n"
    }

    /// Listens on a free loopback port; each connection runs `script`, then is closed.
    init(_ script: @escaping @Sendable (Client) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw Failure(description: "bind or listen: errno \(errno)")
        }
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listening = fd
        let accepting = Thread { [shared] in
            while !shared.stopped.load(ordering: .relaxed) {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                shared.accepted.withLock { $0.append(.now) }
                let connection = Client(client)
                shared.clients.withLock { $0.append(connection) }
                let thread = Thread {
                    script(connection)
                    connection.close()
                }
                thread.name = "FakeNATSServer.client"
                thread.start()
            }
        }
        accepting.name = "FakeNATSServer.accept"
        accepting.start()
    }

    deinit {
        stop()
        close(listening)
    }

    /// The address a bridge connects to.
    var address: NATSServerAddress { NATSServerAddress(host: "127.0.0.1", port: port) }

    /// When each connection was accepted, in order.
    var connectionTimes: [ContinuousClock.Instant] { shared.accepted.withLock { $0 } }
    var connections: Int { shared.accepted.withLock { $0.count } }

    /// Stops accepting and ends every connection (their scripts see the bridge gone).
    func stop() {
        guard !shared.stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listening, Int32(SHUT_RDWR))
        for client in shared.clients.withLock({ $0 }) { client.close() }
    }

    /// What a client sends, one op at a time.
    enum Op: Sendable {
        case connect(String)
        case ping
        case pong
        case sub(subject: String, sid: String)
        case unsub
        case pub(subject: String, replyTo: String?, headers: [UInt8], payload: [UInt8])
        case other(String)
    }

    /// One connection from the bridge.
    final class Client: Sendable {
        let fd: Int32
        private let input = Mutex<[UInt8]>([])
        private let writing = Mutex<Void>(())
        private let closed = Atomic<Bool>(false)
        /// The bridge's subscriptions, subject (or pattern) to sid.
        private let subscriptions = Mutex<[(subject: String, sid: String)]>([])
        /// The stream sequence of the next message a publish stores.
        let nextSequence = Atomic<UInt64>(1)

        init(_ fd: Int32) {
            self.fd = fd
        }

        /// Writes all of `bytes`; false once the bridge is gone.
        @discardableResult
        func write(_ bytes: [UInt8]) -> Bool {
            writing.withLock { _ in
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent < 0, errno == EINTR { continue }
                    guard sent > 0 else { return false }
                    offset += sent
                }
                return true
            }
        }

        @discardableResult
        func write(_ text: String) -> Bool { write(Array(text.utf8)) }

        /// Ends the connection (once).
        func close() {
            guard !closed.exchange(true, ordering: .relaxed) else { return }
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }

        var isClosed: Bool { closed.load(ordering: .relaxed) }

        /// The next op the bridge sent, waiting at most `timeout` seconds for it; nil when none came or the
        /// connection ended. Subscriptions are noted on the way.
        func next(timeout: Double = 10) -> Op? {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if let op = parse() {
                    if case .sub(let subject, let sid) = op { subscriptions.withLock { $0.append((subject, sid)) } }
                    return op
                }
                let left = deadline.timeIntervalSinceNow
                guard left > 0, !isClosed else { return nil }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, Int32(min(left, 0.2) * 1000) + 1) >= 0 || errno == EINTR else { return nil }
                guard poller.revents != 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return nil }
                input.withLock { $0.append(contentsOf: buffer[..<count]) }
            }
        }

        /// One whole op from the front of what was read, or nil.
        private func parse() -> Op? {
            input.withLock { bytes -> Op? in
                guard let lf = bytes.firstIndex(of: 0x0A) else { return nil }
                let line = String(decoding: bytes[..<lf], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                let verb = fields.first?.uppercased() ?? ""
                switch verb {
                case "PUB", "HPUB":
                    let counts = verb == "HPUB" ? 2 : 1
                    guard fields.count >= 2 + counts, let total = Int(fields[fields.count - 1]) else { break }
                    let headerCount = verb == "HPUB" ? Int(fields[fields.count - 2]) ?? 0 : 0
                    let start = lf + 1
                    guard bytes.count >= start + total + 2 else { return nil }
                    let headers = Array(bytes[start..<(start + headerCount)])
                    let payload = Array(bytes[(start + headerCount)..<(start + total)])
                    let replyTo = fields.count == 3 + counts ? fields[2] : nil
                    bytes.removeSubrange(0..<(start + total + 2))
                    return .pub(subject: fields[1], replyTo: replyTo, headers: headers, payload: payload)
                default:
                    break
                }
                bytes.removeSubrange(0...lf)
                switch verb {
                case "CONNECT": return .connect(String(line.dropFirst(8)))
                case "PING": return .ping
                case "PONG": return .pong
                case "SUB": return fields.count >= 3 ? .sub(subject: fields[1], sid: fields[fields.count - 1]) : .other(line)
                case "UNSUB": return .unsub
                default: return .other(line)
                }
            }
        }

        /// The sid of the bridge's subscription that `subject` matches (`*` as the last token matches one token).
        func sid(for subject: String) -> String? {
            subscriptions.withLock { subscriptions in
                if let exact = subscriptions.first(where: { $0.subject == subject }) { return exact.sid }
                return subscriptions.first { entry in
                    guard entry.subject.hasSuffix(".*") else { return false }
                    let head = entry.subject.dropLast(1)
                    return subject.hasPrefix(head) && !subject.dropFirst(head.count).contains(".")
                }?.sid
            }
        }

        /// INFO, then the bridge's CONNECT and PING read and answered with PONG. False when the bridge went or sent
        /// something else.
        @discardableResult
        func handshake(info: String = FakeNATSServer.info()) -> Bool {
            guard write(info) else { return false }
            var connected = false
            while let op = next() {
                switch op {
                case .connect: connected = true
                case .ping where connected: return write("PONG\r\n")
                default: return false
                }
            }
            return false
        }

        /// Sends a message to the bridge's subscription that `inbox` matches: MSG, or HMSG when `headers` is given
        /// (the header block's bytes, `NATS/1.0…` through its empty line). It goes under `subject` when given, as a
        /// consumer's messages come to a pull's inbox under the subject they were published to.
        @discardableResult
        func deliver(
            _ inbox: String, as subject: String? = nil, replyTo: String? = nil, headers: String? = nil, payload: [UInt8]
        ) -> Bool {
            guard let sid = sid(for: inbox) else { return false }
            let subject = subject ?? inbox
            let reply = replyTo.map { " " + $0 } ?? ""
            var bytes: [UInt8]
            if let headers {
                let head = Array(headers.utf8)
                bytes = Array("HMSG \(subject) \(sid)\(reply) \(head.count) \(head.count + payload.count)\r\n".utf8) + head
            } else {
                bytes = Array("MSG \(subject) \(sid)\(reply) \(payload.count)\r\n".utf8)
            }
            bytes += payload + Array("\r\n".utf8)
            return write(bytes)
        }

        /// Answers `op` as a JetStream server that works would, as far as the bridge asks: PING with PONG, every
        /// API call with success, a publish with its acknowledgement (a stream sequence each), a pull with `408
        /// Request Timeout` half a second later. False when the connection is gone.
        @discardableResult
        func answerAsJetStream(_ op: Op) -> Bool {
            switch op {
            case .ping:
                return write("PONG\r\n")
            case .pub(let subject, let replyTo?, _, _):
                if subject.hasPrefix("$JS.API.CONSUMER.MSG.NEXT.") {
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { [self] in
                        deliver(replyTo, headers: "NATS/1.0 408 Request Timeout\r\n\r\n", payload: [])
                    }
                    return true
                }
                if subject.hasPrefix("$JS.API.") { return deliver(replyTo, payload: Array("{}".utf8)) }
                if subject.hasPrefix("$JS.ACK.") { return true }
                let sequence = nextSequence.add(1, ordering: .relaxed).oldValue
                return deliver(replyTo, payload: Array("{\"stream\":\"WORMHOLE_WORMHOLE\",\"seq\":\(sequence)}".utf8))
            default:
                return true
            }
        }

        /// Answers every op as ``answerAsJetStream(_:)`` does until the bridge goes or `seconds` pass.
        func serveJetStream(for seconds: Double = 60) {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline, !isClosed {
                guard let op = next(timeout: 0.5) else {
                    if isClosed { return }
                    continue
                }
                guard answerAsJetStream(op) else { return }
            }
        }

        /// The bridge's pull subscription (its mailbox), once the bridge has made it.
        var mailbox: String? {
            subscriptions.withLock { $0.first { $0.subject.contains(".m") && !$0.subject.hasSuffix(".*") }?.subject }
        }
    }
}
