import Dispatch
import Foundation
import Synchronization
import WormholeEngine

/// One connection to a NATS server: the handshake (`INFO`, `CONNECT`, `PING`/`PONG`), publishing, subscribing,
/// and requests, whose replies come to an inbox subscription of the connection's own. A thread of its own reads
/// what the server sends, answers its `PING`s, and hands each message to its subscription's handler, on that
/// thread, one at a time.
///
/// A connection is used until it fails, then dropped: whatever ends it (the server closing it, garbage from the
/// server, ``close(_:)``) fails every request waiting and calls `onClose` once. Calls after that throw.
package final class NATSConnection: Sendable {
    let address: NATSServerAddress
    /// What the server said of itself when the connection opened.
    let info: NATSServerInfo
    private let socket: SocketBox
    private let inboxPrefix: String
    private let state = Mutex(State())
    /// Held while one op is written, so that ops never interleave on the stream.
    private let writing = Mutex<Void>(())
    private let onClose: @Sendable (BridgeError) -> Void

    private static let inboxSID: UInt64 = 1

    private struct State {
        var nextSID: UInt64 = NATSConnection.inboxSID + 1
        var handlers: [UInt64: @Sendable (NATSMessage) -> Void] = [:]
        var nextToken: UInt64 = 0
        var waiting: [UInt64: Waiter] = [:]
        var pongs: [Waiter] = []
        var mailboxes: [Mailbox] = []
        var closed: BridgeError?
    }

    /// Connects to `address`, and signs in with its user and password or token: the connection waits at most
    /// `timeout`, and so does the handshake as a whole (a server that chatters without ever finishing it is left
    /// as one that says nothing). ``Attempt/cancel()`` on `attempt` ends the handshake at once.
    /// - Throws: ``BridgeError`` when the server cannot be reached, does not finish the handshake in time,
    ///   refuses the sign-in or speaks garbage, or the attempt was cancelled.
    package static func open(
        _ address: NATSServerAddress, name: String, timeout: Duration, attempt: Attempt = Attempt(),
        onClose: @escaping @Sendable (BridgeError) -> Void = { _ in }
    ) throws(BridgeError) -> NATSConnection {
        let milliseconds = Int(timeout / .milliseconds(1))
        let descriptor: OwnedDescriptor
        do throws(WormholeError) {
            descriptor = try TCPSocket.connect(host: address.host, port: address.port, timeoutMilliseconds: milliseconds)
        } catch {
            throw BridgeError("cannot connect to \(address): \(error)")
        }
        let socket = SocketBox(descriptor)
        guard attempt.begin(socket) else { throw BridgeError("the connection to \(address) was given up") }
        defer { attempt.end() }
        let deadline = ContinuousClock.now + timeout
        var parser = NATSParser(maximumControlLine: Limits.natsControlLine)
        func nextOp() throws(BridgeError) -> NATSServerOp {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                do {
                    if let op = try parser.next() { return op }
                } catch {
                    throw BridgeError("\(address) answered garbage: \(error)")
                }
                let left = deadline - .now
                guard left > .zero else { throw BridgeError("\(address) did not finish the handshake within \(timeout)") }
                TCPSocket.setReceiveTimeout(socket.descriptor, milliseconds: max(1, Int(left / .milliseconds(1))))
                let count: Int
                do throws(WormholeError) {
                    count = try socket.receive(into: &buffer)
                } catch where error.code == .timedOut {
                    throw BridgeError("\(address) did not finish the handshake within \(timeout)")
                } catch {
                    throw BridgeError("\(address) did not answer: \(error)")
                }
                guard count > 0 else {
                    if attempt.isCancelled { throw BridgeError("the connection to \(address) was given up") }
                    throw BridgeError("\(address) closed the connection during the handshake")
                }
                buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            }
        }
        guard case .info(let info) = try nextOp() else { throw BridgeError("\(address) did not begin with INFO: not a NATS server") }
        parser.maximumPayload = Self.largestMessage(info)
        // No echo: what this connection publishes never comes back to its own subscriptions. A host's request
        // would otherwise reach its own bridge's responder subscription and be posted to its responders a
        // second time, and the server would never say "no responders" while this host had one.
        let options = NATSConnectOptions(
            name: name, user: address.user, password: address.password, token: address.token, echo: false)
        let hello = NATSClientOp.connect(options) + NATSClientOp.ping
        do throws(WormholeError) {
            try socket.send(hello)
        } catch {
            throw BridgeError("\(address) took no sign-in: \(error)")
        }
        answered: while true {
            switch try nextOp() {
            case .pong: break answered
            case .error(let message): throw BridgeError("\(address) refused the connection: \(message)")
            case .ping, .ok, .info, .message: continue
            }
        }
        TCPSocket.setReceiveTimeout(socket.descriptor, milliseconds: 0)
        let connection = NATSConnection(address: address, info: info, socket: socket, onClose: onClose)
        try connection.write { (bytes) throws(NATSProtocolError) in
            bytes += try NATSClientOp.sub(subject: connection.inboxPrefix + ".*", queueGroup: nil, sid: Self.inboxSID)
        }
        let start = parser
        let reader = Thread { connection.read(start) }
        reader.name = "Wormhole.Bridge.NATS"
        reader.start()
        return connection
    }

    /// The largest message read from a server that said `info`: its maximum payload (64 MiB at most, whatever it
    /// says), with room for its API's answers, which it does not bound by it.
    private static func largestMessage(_ info: NATSServerInfo) -> Int {
        min(max(info.maxPayload, 0), NATSServerInfo.largestMaxPayload) + Limits.natsPayloadSlack
    }

    private init(address: NATSServerAddress, info: NATSServerInfo, socket: SocketBox, onClose: @escaping @Sendable (BridgeError) -> Void) {
        self.address = address
        self.info = info
        self.socket = socket
        self.onClose = onClose
        inboxPrefix = "_INBOX." + String(UInt64.random(in: 1...UInt64.max), radix: 16) + String(UInt64.random(in: 1...UInt64.max), radix: 16)
    }

    /// Why the connection ended; nil while it is open.
    package var closedReason: BridgeError? { state.withLock { $0.closed } }

    // MARK: Writing

    /// Publishes `payload` to `subject`, with `headers` when given.
    /// - Throws: ``BridgeError`` when the connection is closed, the subject is not one NATS takes, or the
    ///   payload is larger than the server takes (``NATSServerInfo/maxPayload``).
    package func publish(_ subject: String, replyTo: String? = nil, headers: NATSHeaders? = nil, payload: [UInt8]) throws(BridgeError) {
        let size = payload.count + (headers?.encoded().count ?? 0)
        guard size <= info.maxPayload else {
            throw BridgeError("a message of \(size) bytes is over the server's maximum of \(info.maxPayload) (max_payload)")
        }
        try write { (bytes) throws(NATSProtocolError) in
            if let headers {
                bytes += try NATSClientOp.hpub(subject: subject, replyTo: replyTo, headers: headers, payload: payload)
            } else {
                bytes += try NATSClientOp.pub(subject: subject, replyTo: replyTo, payload: payload)
            }
        }
    }

    /// Subscribes to `subject`; `handler` gets each message on the connection's reading thread. Returns the
    /// subscription's id.
    package func subscribe(_ subject: String, handler: @escaping @Sendable (NATSMessage) -> Void) throws(BridgeError) -> UInt64 {
        let sid = state.withLock { state in
            defer { state.nextSID += 1 }
            state.handlers[state.nextSID] = handler
            return state.nextSID
        }
        try write { (bytes) throws(NATSProtocolError) in bytes += try NATSClientOp.sub(subject: subject, queueGroup: nil, sid: sid) }
        return sid
    }

    /// Ends the subscription `sid`: its handler gets nothing more.
    /// - Throws: ``BridgeError`` when the connection is closed.
    package func unsubscribe(_ sid: UInt64) throws(BridgeError) {
        _ = state.withLock { $0.handlers.removeValue(forKey: sid) }
        try write { bytes in bytes += NATSClientOp.unsub(sid: sid) }
    }

    /// A subscription of the connection's own inbox whose messages wait in order for ``Mailbox/next(timeout:)``:
    /// where a pull from a JetStream consumer has its messages sent, which come under their own subjects.
    package func mailbox() throws(BridgeError) -> Mailbox {
        let box = Mailbox(subject: "\(inboxPrefix).m\(UInt64.random(in: 1...UInt64.max))")
        try state.withLock { (state) throws(BridgeError) in
            if let closed = state.closed { throw closed }
            state.mailboxes.append(box)
        }
        _ = try subscribe(box.subject) { [weak self] message in
            guard !box.put(message) else { return }
            guard let self else { return }
            self.close(BridgeError("\(self.address) sent more than \(Limits.natsMailboxDepth) messages to the pull's inbox, which asks for one at a time"))
        }
        return box
    }

    /// Sends a request to `subject` and waits at most `timeout` for its first reply, which may carry a status
    /// (503: no responders).
    /// - Throws: ``BridgeError`` when no reply came in time or the connection ended.
    func request(_ subject: String, headers: NATSHeaders? = nil, payload: [UInt8], timeout: Duration) throws(BridgeError) -> NATSMessage {
        let waiter = Waiter()
        let token = try state.withLock { (state) throws(BridgeError) -> UInt64 in
            if let closed = state.closed { throw closed }
            state.nextToken += 1
            state.waiting[state.nextToken] = waiter
            return state.nextToken
        }
        do throws(BridgeError) {
            try publish(subject, replyTo: "\(inboxPrefix).\(token)", headers: headers, payload: payload)
        } catch {
            _ = state.withLock { $0.waiting.removeValue(forKey: token) }
            throw error
        }
        guard let result = waiter.wait(timeout) else {
            _ = state.withLock { $0.waiting.removeValue(forKey: token) }
            throw BridgeError("no answer from \(address) to \(subject) within \(timeout)")
        }
        return try result.get()
    }

    /// Waits until the server has read everything written before: a `PING` answered by its `PONG`.
    package func roundTrip(timeout: Duration) throws(BridgeError) {
        let waiter = Waiter()
        try state.withLock { (state) throws(BridgeError) in
            if let closed = state.closed { throw closed }
            state.pongs.append(waiter)
        }
        try write { (bytes) throws(NATSProtocolError) in bytes += NATSClientOp.ping }
        guard let result = waiter.wait(timeout) else { throw BridgeError("no PONG from \(address) within \(timeout)") }
        _ = try result.get()
    }

    /// Ends the connection, with `reason` for whatever waits on it.
    package func close(_ reason: BridgeError) {
        let ended = state.withLock { state -> (waiters: [Waiter], mailboxes: [Mailbox], first: Bool) in
            guard state.closed == nil else { return ([], [], false) }
            state.closed = reason
            defer {
                state.waiting = [:]
                state.pongs = []
                state.handlers = [:]
                state.mailboxes = []
            }
            return (Array(state.waiting.values) + state.pongs, state.mailboxes, true)
        }
        guard ended.first else { return }
        TCPSocket.shutdown(socket.descriptor)
        for waiter in ended.waiters { waiter.finish(.failure(reason)) }
        for mailbox in ended.mailboxes { mailbox.end() }
        onClose(reason)
    }

    /// Encodes one or more ops with `encode` and writes them in one go.
    private func write(_ encode: (inout [UInt8]) throws(NATSProtocolError) -> Void) throws(BridgeError) {
        var bytes: [UInt8] = []
        do {
            try encode(&bytes)
        } catch {
            throw BridgeError("\(error)")
        }
        try writing.withLock { (_: inout Void) throws(BridgeError) in
            if let closed = closedReason { throw closed }
            do throws(WormholeError) {
                try socket.send(bytes)
            } catch {
                let reason = BridgeError("writing to \(address) failed: \(error)")
                // Not under this lock: closing calls back.
                DispatchQueue.global().async { self.close(reason) }
                throw reason
            }
        }
    }

    // MARK: Reading

    /// The reading thread: until the connection ends, every op the server sends, handled in order.
    private func read(_ start: NATSParser) {
        var parser = start
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var reason = BridgeError("\(address) closed the connection")
        reading: while closedReason == nil {
            do {
                while let op = try parser.next() { handle(op, &parser) }
            } catch {
                reason = BridgeError("\(address) sent what is not NATS's protocol: \(error)")
                break reading
            }
            let count: Int
            do throws(WormholeError) {
                count = try socket.receive(into: &buffer)
            } catch {
                reason = BridgeError("reading from \(address) failed: \(error)")
                break
            }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        close(reason)
    }

    private func handle(_ op: NATSServerOp, _ parser: inout NATSParser) {
        switch op {
        case .ping:
            try? write { (bytes) throws(NATSProtocolError) in bytes += NATSClientOp.pong }
        case .pong:
            let waiter = state.withLock { $0.pongs.isEmpty ? nil : $0.pongs.removeFirst() }
            waiter?.finish(.success(nil))
        case .ok:
            break
        case .info(let info):
            parser.maximumPayload = Self.largestMessage(info)
        case .error(let message):
            BridgeLog.write("\(address) said: -ERR \(message)")
        case .message(let message):
            if message.sid == Self.inboxSID {
                guard let dot = message.subject.lastIndex(of: "."), let token = UInt64(message.subject[message.subject.index(after: dot)...])
                else { return }
                let waiter = state.withLock { $0.waiting.removeValue(forKey: token) }
                waiter?.finish(.success(message))
            } else {
                let handler = state.withLock { $0.handlers[message.sid] }
                handler?(message)
            }
        }
    }
}

extension NATSConnection {
    /// One connection being made, which another thread may give up: its socket is shut down, so that a wait of
    /// the handshake ends at once, rather than after the timeout.
    package final class Attempt: Sendable {
        private let state = Mutex<(socket: SocketBox?, cancelled: Bool)>((nil, false))

        package init() {}

        /// Gives the attempt up: the handshake under way, or the next, fails at once.
        package func cancel() {
            // Kept until shut down: its descriptor cannot be closed, and its number reused, meanwhile.
            let socket = state.withLock { state -> SocketBox? in
                state.cancelled = true
                return state.socket
            }
            if let socket { TCPSocket.shutdown(socket.descriptor) }
        }

        var isCancelled: Bool { state.withLock { $0.cancelled } }

        /// Notes the socket whose handshake begins; false when the attempt was given up.
        fileprivate func begin(_ socket: SocketBox) -> Bool {
            state.withLock { state in
                guard !state.cancelled else { return false }
                state.socket = socket
                return true
            }
        }

        /// The handshake ended, one way or the other.
        fileprivate func end() {
            state.withLock { $0.socket = nil }
        }
    }
}

/// The socket of a connection, closed when the connection is released.
private final class SocketBox: Sendable {
    private let owned: Mutex<OwnedDescriptor?>
    let descriptor: Descriptor

    init(_ socket: consuming OwnedDescriptor) {
        descriptor = socket.descriptor
        owned = Mutex(socket)
    }

    /// Writes all of `bytes` (``TCPSocket/send(_:_:)``).
    func send(_ bytes: [UInt8]) throws(WormholeError) {
        var failure: WormholeError?
        bytes.withUnsafeBytes { raw in
            do throws(WormholeError) {
                try TCPSocket.send(descriptor, raw)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Reads what has come into `buffer` (``TCPSocket/receive(_:into:)``); 0 when the server closed.
    func receive(into buffer: inout [UInt8]) throws(WormholeError) -> Int {
        var outcome: Result<Int, WormholeError> = .success(0)
        buffer.withUnsafeMutableBytes { raw in
            do throws(WormholeError) {
                outcome = .success(try TCPSocket.receive(descriptor, into: raw))
            } catch {
                outcome = .failure(error)
            }
        }
        return try outcome.get()
    }
}

/// Messages to one subject, kept in order until taken.
package final class Mailbox: Sendable {
    let subject: String
    private let messages = Mutex<(waiting: [NATSMessage], ended: Bool)>(([], false))
    private let arrived = DispatchSemaphore(value: 0)

    init(subject: String) {
        self.subject = subject
    }

    /// Keeps `message` for ``next(timeout:)``; false, keeping nothing, when ``Limits/natsMailboxDepth`` wait
    /// already: more than anyone asked for.
    func put(_ message: NATSMessage) -> Bool {
        let kept = messages.withLock { messages in
            guard messages.waiting.count < Limits.natsMailboxDepth else { return false }
            messages.waiting.append(message)
            return true
        }
        if kept { arrived.signal() }
        return kept
    }

    /// Its connection ended: a wait for the next message ends now, with none.
    func end() {
        messages.withLock { $0.ended = true }
        arrived.signal()
    }

    /// The oldest message not taken, waiting at most `timeout` for one; nil when none came, or the connection
    /// ended.
    func next(timeout: Duration) -> NATSMessage? {
        let nanoseconds = Int(min(max(timeout / .nanoseconds(1), 0), 1e17))
        guard arrived.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return messages.withLock { messages in
            if messages.ended {
                arrived.signal()
                return nil
            }
            return messages.waiting.isEmpty ? nil : messages.waiting.removeFirst()
        }
    }
}

/// One request's (or `PING`'s) wait for its answer.
private final class Waiter: Sendable {
    private let result = Mutex<Result<NATSMessage?, BridgeError>?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    func finish(_ outcome: Result<NATSMessage?, BridgeError>) {
        let first = result.withLock { result in
            guard result == nil else { return false }
            result = outcome
            return true
        }
        if first { signal.signal() }
    }

    /// The answer, or nil when none came within `timeout`.
    func wait(_ timeout: Duration) -> Result<NATSMessage, BridgeError>? {
        let nanoseconds = Int(min(max(timeout / .nanoseconds(1), 0), 1e17))
        guard signal.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
        return result.withLock { result in
            result.map { outcome in
                outcome.flatMap { message in
                    message.map { .success($0) } ?? .success(NATSMessage(subject: "", sid: 0, replyTo: nil, headers: nil, payload: []))
                }
            }
        }
    }
}
