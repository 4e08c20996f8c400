import Foundation
import Synchronization
import Wormhole
import WormholeEngine
import WormholeRelay

/// The bridge's work with its server, on threads of its own: connect (again, with a growing wait, after each
/// failure), make the stream and this host's durable consumer, then publish what waits in the outbox and, on a
/// second thread, post what the consumer hands over, one message at a time, acknowledging each once it is in
/// the container.
final class BridgeSession: Sendable {
    private let server: NATSServerAddress
    private let subjects: BridgeSubjects
    private let options: WormholeBridge.Options
    private let outbound: BridgeOutbound
    private let inbound: BridgeInbound
    private let entries: BridgeEntries
    private let requests: BridgeRequests
    private let device: UInt64
    private let saveState: @Sendable () throws -> Void
    private let board = Mutex(BridgeStatus())
    private let flags = Mutex(Flags())
    /// Signalled when the session's thread has ended.
    private let ended = DispatchSemaphore(value: 0)
    /// Signalled when the bridge closes: ends a wait before connecting again.
    private let closing = DispatchSemaphore(value: 0)

    private struct Flags {
        var started = false
        var closed = false
        var connection: NATSConnection?
        /// The connection being made, given up when the bridge closes.
        var attempt: NATSConnection.Attempt?
    }

    init(
        server: NATSServerAddress, subjects: BridgeSubjects, options: WormholeBridge.Options, outbound: BridgeOutbound,
        inbound: BridgeInbound, entries: BridgeEntries, requests: BridgeRequests, device: UInt64,
        saveState: @escaping @Sendable () throws -> Void
    ) {
        self.server = server
        self.subjects = subjects
        self.options = options
        self.outbound = outbound
        self.inbound = inbound
        self.entries = entries
        self.requests = requests
        self.device = device
        self.saveState = saveState
    }

    var status: BridgeStatus {
        var status = board.withLock { $0 }
        status.waiting = outbound.waiting
        let requests = requests.tally
        status.requestsSent = requests.sent
        status.requestsReceived = requests.answered
        status.dropped += requests.dropped
        // A failure said by a thread on its way out does not make a closed bridge look like it connects.
        if closed { status.connection = .stopped }
        return status
    }

    private var closed: Bool { flags.withLock { $0.closed } }

    func start() {
        let first = flags.withLock { flags in
            defer { flags.started = true }
            return !flags.started && !flags.closed
        }
        guard first else { return }
        board.withLock { $0.connection = .connecting }
        let thread = Thread { [self] in
            run()
            ended.signal()
        }
        thread.name = "Wormhole.Bridge"
        thread.start()
    }

    /// Ends the session: the connection closes (or the one being made is given up), and this returns once the
    /// threads stopped posting, for every caller (a second, concurrent call waits as the first does).
    func close() {
        let (connection, attempt, first, started) = flags.withLock { flags in
            defer { flags.closed = true }
            return (flags.connection, flags.attempt, !flags.closed, flags.started)
        }
        guard started else { return }
        if first {
            attempt?.cancel()
            connection?.close(BridgeError("the bridge closed"))
            outbound.bell.signal()
            closing.signal()
        }
        // Passed on, so that every caller returns once the thread ended.
        if ended.wait(timeout: .now() + .seconds(30)) == .success { ended.signal() }
        board.withLock { $0.connection = .stopped }
    }

    /// Waits `duration`, or less when the bridge closes.
    private func rest(_ duration: Duration) {
        // Passed on: the other thread's wait ends too.
        if closing.wait(timeout: .now() + .milliseconds(Int(duration / .milliseconds(1)))) == .success { closing.signal() }
    }

    private func count(_ change: (inout BridgeStatus) -> Void) { board.withLock { change(&$0) } }

    private func failed(_ error: BridgeError) {
        count {
            $0.lastError = error.message
            $0.connection = .connecting
        }
        BridgeLog.write(error.message)
    }

    /// Says a failure that leaves the connection as it is.
    private func noted(_ error: BridgeError) {
        count { $0.lastError = error.message }
        BridgeLog.write(error.message)
    }

    // MARK: Connecting

    private func run() {
        var backoff = Limits.bridgeFirstBackoff
        var first = true
        // The server given, then the others of its cluster as the last one connected to said (`connect_urls`),
        // tried in turn; the wait grows after each round that found none.
        var candidates = [server]
        var attempt = 0
        while !closed {
            if !first { count { $0.reconnects += 1 } }
            first = false
            let target = candidates[attempt % candidates.count]
            attempt += 1
            let opening = NATSConnection.Attempt()
            guard flags.withLock({ flags -> Bool in
                flags.attempt = opening
                return !flags.closed
            }) else { return }
            do throws(BridgeError) {
                let outbound = self.outbound
                let connection = try NATSConnection.open(
                    target, name: "wormhole-bridge-\(String(device, radix: 16))", timeout: options.timeout, attempt: opening,
                    // The publishing thread, waiting for the outbox, sees at once that the connection ended.
                    onClose: { _ in outbound.bell.signal() })
                candidates = Self.candidates(server, connection.info.connectURLs)
                attempt = 0
                let accepted = flags.withLock { flags -> Bool in
                    flags.attempt = nil
                    guard !flags.closed else { return false }
                    flags.connection = connection
                    return true
                }
                guard accepted else {
                    connection.close(BridgeError("the bridge closed"))
                    return
                }
                let stream = JetStream(connection: connection, timeout: options.timeout)
                try prepare(stream)
                try requests.connected(connection)
                count { $0.connection = .connected }
                let began = ContinuousClock.now
                serve(stream)
                requests.disconnected()
                // Only a connection that served a while starts the waits over: one that a server ends each time
                // soon after it was made is tried again less and less often.
                if ContinuousClock.now - began >= Limits.bridgeSteadyConnection { backoff = Limits.bridgeFirstBackoff }
                if let reason = connection.closedReason, !closed { failed(reason) }
            } catch {
                requests.disconnected()
                if closed { return }
                failed(error)
            }
            flags.withLock { flags in
                flags.connection?.close(BridgeError("connecting again"))
                flags.connection = nil
                flags.attempt = nil
            }
            if closed { return }
            guard attempt % candidates.count == 0 else { continue }
            rest(backoff)
            backoff = min(backoff * 2, Limits.bridgeLongestBackoff)
        }
    }

    /// The servers to try: `server` first, then the others of its cluster `urls` name, each once, at most
    /// ``Limits/bridgeLargestCluster`` in all.
    static func candidates(_ server: NATSServerAddress, _ urls: [String]) -> [NATSServerAddress] {
        var seen: Set<NATSServerAddress> = [server]
        return [server] + others(urls, like: server).filter { seen.insert($0).inserted }.prefix(Limits.bridgeLargestCluster - 1)
    }

    /// The servers `urls` name (`host:port`, `[v6 address]:port`), signed in to as `like` is.
    static func others(_ urls: [String], like server: NATSServerAddress) -> [NATSServerAddress] {
        urls.compactMap { url in
            guard let colon = url.lastIndex(of: ":"), let port = UInt16(url[url.index(after: colon)...]), port > 0 else { return nil }
            var host = String(url[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
            var address = server
            address.host = host
            address.port = port
            return address
        }
    }

    private func prepare(_ stream: JetStream) throws(BridgeError) {
        let position = try stream.ensureStream(
            StreamConfig(
                name: subjects.stream, subjects: [subjects.notifications], numReplicas: options.replicas,
                maxAge: Int64(options.maximumAge / .nanoseconds(1)),
                duplicateWindow: Int64(options.duplicateWindow / .nanoseconds(1))))
        // A consumer made anew: on the first run, or after an operator deleted it, or it went with its stream.
        let start = inbound.consumerStart(on: position)
        let made = try stream.ensureConsumer(
            stream: subjects.stream,
            ConsumerConfig(
                durableName: subjects.consumer(for: device), ackWait: Int64(Limits.bridgeAckWait / .nanoseconds(1)),
                filterSubject: subjects.notifications, start: start))
        inbound.connected(to: position, madeConsumer: made ? start : nil)
        guard !entries.isEmpty else { return }
        try stream.ensureStream(
            StreamConfig(
                name: subjects.entriesStream, subjects: [subjects.entries], numReplicas: options.replicas, maxAge: 0,
                duplicateWindow: Int64(options.duplicateWindow / .nanoseconds(1)), maxMsgsPerSubject: 1))
        // Made anew, it starts with what holds now: the last write of each entry.
        try stream.ensureConsumer(
            stream: subjects.entriesStream,
            ConsumerConfig(
                durableName: subjects.entriesConsumer(for: device), ackWait: Int64(Limits.bridgeAckWait / .nanoseconds(1)),
                filterSubject: subjects.entries, start: .lastPerSubject))
        entries.connected()
    }

    /// Publishes and pulls until the connection ends or the bridge closes.
    private func serve(_ stream: JetStream) {
        let inbound = self.inbound
        let entries = self.entries
        let saveState = self.saveState
        var feeds = [
            Feed(
                stream: subjects.stream, consumer: subjects.consumer(for: device), skipped: { inbound.skipped(before: $0) },
                applied: { inbound.applied(streamSequence: $0) }
            ) { [self] message in tally(try inbound.apply(message)) }
        ]
        if !entries.isEmpty {
            feeds.append(
                Feed(
                    stream: subjects.entriesStream, consumer: subjects.entriesConsumer(for: device),
                    skipped: { entries.skipped(before: $0) }, applied: { entries.applied(streamSequence: $0) }
                ) { [self] message in
                    switch entries.apply(message, save: saveState) {
                    case .applied: count { $0.valuesApplied += 1 }
                    case .dropped: count { $0.dropped += 1 }
                    case .unchanged: break
                    }
                })
        }
        let pulling = DispatchSemaphore(value: 0)
        for feed in feeds {
            let puller = Thread { [self] in
                pull(feed, stream)
                pulling.signal()
            }
            puller.name = "Wormhole.Bridge.Pull"
            puller.start()
        }
        publish(stream)
        stream.connection.close(BridgeError("connecting again"))
        for _ in feeds { pulling.wait() }
    }

    // MARK: Publishing

    private func publish(_ stream: JetStream) {
        let connection = stream.connection
        while !closed, connection.closedReason == nil {
            requests.tick()
            let due = entries.due()
            for (index, content) in due.enumerated() {
                do throws(BridgeError) {
                    try publish(content, stream)
                } catch {
                    entries.retry(Array(due[index...]))
                    connection.close(error)
                    break
                }
            }
            let items = outbound.next(64)
            if items.isEmpty {
                _ = outbound.bell.wait(timeout: .now() + .seconds(1))
                continue
            }
            var done: UInt64 = 0
            for item in items {
                do throws(BridgeError) {
                    try publish(item, stream)
                } catch {
                    connection.close(error)
                    break
                }
                done = item.link
            }
            guard done > 0 else { continue }
            StopPoint.reached("bridge.published")
            // The numbering saved before the items go: a run after a kill never numbers anew what was sent. A
            // state that cannot be saved (a full disk) is tried again each second; what the server stored is not
            // published again meanwhile.
            while true {
                do {
                    try saveState()
                    break
                } catch {
                    noted(BridgeError("bridge state not saved: \(error)"))
                }
                if closed { return }
                rest(Limits.bridgeStateSaveInterval)
            }
            StopPoint.reached("bridge.saved")
            outbound.published(upTo: done)
            count { $0.sent += items.prefix { $0.link <= done }.count }
        }
    }

    /// Publishes a retained notification's or a group value's latest write here to its subject of the entries'
    /// stream, or drops it (logged, counted) when the server can never take it.
    private func publish(_ content: SyncedEntry.Content, _ stream: JetStream) throws(BridgeError) {
        let payload: [UInt8]
        do {
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            payload = Array(try encoder.encode(content))
        } catch {
            throw BridgeError("cannot encode \(content.entry.name): \(error)")
        }
        var headers = NATSHeaders()
        do {
            try headers.set(BridgeHeaders.host, String(device, radix: 16))
        } catch {
            throw BridgeError("\(error)")
        }
        let subject = subjects.subject(for: content.entry)
        let size = payload.count + headers.encoded().count + 64
        guard size <= stream.connection.info.maxPayload, subject.utf8.count <= Limits.natsLongestSubject else {
            count { $0.dropped += 1 }
            BridgeLog.write(
                "\(content.entry.kind.rawValue) \(content.entry.name) is \(size) bytes under a subject of \(subject.utf8.count), over what the server takes; dropped")
            return
        }
        // The stream keeps the last message of each subject: it must be the latest write, not the last
        // published. Each publish says which message it follows, and is refused when another came first; then
        // what the stream holds is read again and compared.
        for _ in 0..<8 {
            let last = try stream.lastMessage(on: subject, stream: subjects.entriesStream)
            if let last, let held = try? StrictPropertyList.decode(SyncedEntry.Content.self, from: last.message.payload),
                held.stamp >= content.stamp
            {
                // As late or later: this host's consumer brings it here.
                return
            }
            var guarded = headers
            do {
                try guarded.set(BridgeHeaders.expectedLastSubjectSequence, String(last?.sequence ?? 0))
            } catch {
                throw BridgeError("\(error)")
            }
            let answer = try stream.publish(subject, headers: guarded, payload: payload, stream: subjects.entriesStream)
            if answer.error == nil { return }
        }
        throw BridgeError("\(content.entry.kind.rawValue) \(content.entry.name) not published: other hosts kept writing it")
    }

    /// Publishes one item, or drops it (logged, counted) when the server can never take it.
    private func publish(_ item: RelayItem, _ stream: JetStream) throws(BridgeError) {
        let payload: [UInt8]
        do {
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            payload = Array(try encoder.encode(item))
        } catch {
            throw BridgeError("cannot encode \(item.name): \(error)")
        }
        var headers = NATSHeaders()
        let host = String(device, radix: 16)
        do {
            try headers.set(BridgeHeaders.host, host)
            try headers.set(BridgeHeaders.messageID, "\(host)-\(item.link)")
        } catch {
            throw BridgeError("\(error)")
        }
        guard item.skipped != true else { return }
        let size = payload.count + headers.encoded().count
        guard size <= stream.connection.info.maxPayload else {
            count { $0.dropped += 1 }
            BridgeLog.write(
                "\(item.name) is \(size) bytes as a message, over the server's maximum of \(stream.connection.info.maxPayload) (max_payload); dropped")
            return
        }
        let subject = subjects.subject(for: item.name)
        guard subject.utf8.count <= Limits.natsLongestSubject else {
            count { $0.dropped += 1 }
            BridgeLog.write(
                "a name of \(item.name.utf8.count) bytes is a subject of \(subject.utf8.count), over the \(Limits.natsLongestSubject) a server reads; dropped")
            return
        }
        _ = try stream.publish(subject, headers: headers, payload: payload, stream: subjects.stream)
    }

    // MARK: Pulling

    private func tally(_ outcome: BridgeInbound.Outcome) {
        count { status in
            switch outcome {
            case .posted: status.posted += 1
            case .duplicate: status.duplicatesDropped += 1
            case .dropped: status.dropped += 1
            case .ownMessage: break
            }
        }
    }

    /// One consumer the bridge pulls from: the notifications', or the entries'.
    private struct Feed: Sendable {
        let stream: String
        let consumer: String
        /// What the consumer passed over before a message of this stream sequence.
        let skipped: @Sendable (UInt64) -> ClosedRange<UInt64>?
        /// Notes a stream sequence applied.
        let applied: @Sendable (UInt64) -> Void
        /// Applies one message; throws when it cannot now (it is not acknowledged, and comes again).
        let apply: @Sendable (NATSMessage) throws -> Void

        init(
            stream: String, consumer: String, skipped: @escaping @Sendable (UInt64) -> ClosedRange<UInt64>?,
            applied: @escaping @Sendable (UInt64) -> Void, apply: @escaping @Sendable (NATSMessage) throws -> Void
        ) {
            self.stream = stream
            self.consumer = consumer
            self.skipped = skipped
            self.applied = applied
            self.apply = apply
        }
    }

    private func pull(_ feed: Feed, _ stream: JetStream) {
        let connection = stream.connection
        var lastSave = ContinuousClock.now
        // Saved as the thread ends too (the bridge closing, the connection ending): the next run, or the next
        // consumer made, starts from where this one stopped, not from up to an interval before.
        defer {
            if feed.stream == subjects.stream, inbound.unsaved {
                do {
                    try saveState()
                    inbound.saved()
                } catch {
                    noted(BridgeError("bridge state not saved: \(error)"))
                }
            }
        }
        let mailbox: Mailbox
        do throws(BridgeError) {
            mailbox = try connection.mailbox()
        } catch {
            connection.close(error)
            return
        }
        while !closed, connection.closedReason == nil {
            do {
                if let message = try stream.next(
                    stream: feed.stream, consumer: feed.consumer, expiry: Limits.bridgePullExpiry, into: mailbox)
                {
                    if let sequence = JetStream.streamSequence(of: message, stream: feed.stream, consumer: feed.consumer) {
                        try take(message, sequence: sequence, feed: feed, from: stream)
                    } else {
                        // Published to the inbox by someone else (who saw where the pulls go): not acknowledged,
                        // since its acknowledgement subject is not the consumer's, and not posted.
                        count { $0.dropped += 1 }
                        BridgeLog.write("a message on \(message.subject) came to the pull's inbox, not from this host's consumer; dropped")
                    }
                }
                // The notifications' puller alone saves what it posted, and empties the posted log after.
                if feed.stream == subjects.stream, inbound.unsaved, ContinuousClock.now - lastSave >= Limits.bridgeStateSaveInterval {
                    lastSave = .now
                    // One that fails (a full disk) is tried again at the next interval: what was posted is in the
                    // posted log, and what was acknowledged does not come again.
                    do {
                        try saveState()
                        inbound.saved()
                    } catch {
                        noted(BridgeError("bridge state not saved: \(error)"))
                    }
                }
            } catch {
                connection.close(error as? BridgeError ?? BridgeError("\(error)"))
                return
            }
        }
    }

    /// Applies what the consumer handed over as the stream's message `sequence`, after what it passed over, and
    /// acknowledges it.
    /// - Throws: When the container cannot be written, or the server fails: the message is not acknowledged, and
    ///   comes again on the next connection.
    private func take(_ message: NATSMessage, sequence: UInt64, feed: Feed, from stream: JetStream) throws {
        // What the consumer passed over (a cluster's server that lagged as it took the consumer over) is read from
        // the stream first, in order, before this one is acknowledged: the stream keeps messages for their age,
        // whoever took them.
        if let skipped = feed.skipped(sequence) {
            for earlier in skipped.prefix(Limits.bridgeLongestGap) {
                guard let stored = try stream.message(earlier, stream: feed.stream) else {
                    BridgeLog.write("message \(earlier) of \(feed.stream), passed over by the consumer, is no longer kept")
                    continue
                }
                try feed.apply(stored)
                feed.applied(earlier)
            }
            // Counted without `count`, which a range wider than `Int` traps on.
            let passed = skipped.upperBound - skipped.lowerBound + 1
            if passed > UInt64(Limits.bridgeLongestGap) {
                BridgeLog.write(
                    "the consumer passed over \(passed) messages of \(feed.stream); the first \(Limits.bridgeLongestGap) were read, the rest are left")
            }
            count { $0.gapsFilled += 1 }
        }
        try feed.apply(message)
        feed.applied(sequence)
        try stream.acknowledge(message)
        StopPoint.reached("bridge.acknowledged")
    }
}
