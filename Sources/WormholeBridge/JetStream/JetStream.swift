import Foundation
import WormholeEngine

/// JetStream's API as the bridge uses it, over one ``NATSConnection``: JSON requests on `$JS.API.…` to make the
/// stream and a host's durable consumer, publishing with the server's acknowledgement, pulling the next message
/// and acknowledging it.
package struct JetStream {
    let connection: NATSConnection
    let timeout: Duration

    package init(connection: NATSConnection, timeout: Duration) {
        self.connection = connection
        self.timeout = timeout
    }

    /// Makes the stream unless it exists, and says which stream it is and how far it goes. An existing stream is
    /// used as it is: its subjects, storage and replicas are an operator's to change.
    /// - Throws: ``BridgeError`` when the server has no JetStream, or refuses the stream.
    @discardableResult
    package func ensureStream(_ config: StreamConfig) throws(BridgeError) -> StreamPosition {
        let info = try call("STREAM.INFO.\(config.name)", body: nil)
        if info.error == nil { return info.position }
        guard info.error?.errCode == JetStreamAnswer.streamNotFound else { throw info.failure("stream \(config.name)") }
        let created = try call("STREAM.CREATE.\(config.name)", body: try Self.json(config))
        guard let error = created.error else { return created.position }
        // Made by another host's bridge at the same moment: the same stream.
        guard error.errCode == JetStreamAnswer.streamNameInUse else { throw created.failure("stream \(config.name) not made") }
        let again = try call("STREAM.INFO.\(config.name)", body: nil)
        guard again.error == nil else { throw again.failure("stream \(config.name)") }
        return again.position
    }

    /// Makes the durable consumer unless it exists. Returns whether it made it.
    @discardableResult
    package func ensureConsumer(stream: String, _ config: ConsumerConfig) throws(BridgeError) -> Bool {
        let info = try call("CONSUMER.INFO.\(stream).\(config.durableName)", body: nil)
        if info.error == nil { return false }
        guard info.error?.errCode == JetStreamAnswer.consumerNotFound else {
            throw info.failure("consumer \(config.durableName)")
        }
        let created = try call(
            "CONSUMER.DURABLE.CREATE.\(stream).\(config.durableName)",
            body: try Self.json(CreateConsumer(streamName: stream, config: config)))
        if created.error != nil { throw created.failure("consumer \(config.durableName) not made") }
        return true
    }

    /// Publishes a message into the stream and waits for the server to say it stored it (or already had it:
    /// the same `Nats-Msg-Id` within the stream's duplicate window).
    /// A message published with `Nats-Expected-Last-Subject-Sequence` that another's came before is not stored:
    /// its answer carries ``JetStreamAnswer/wrongLastSequence``.
    /// - Throws: ``BridgeError`` when no stream takes the subject, the server refused the message (too large,
    ///   a limit of the stream), did not answer in time, or the answer is not `stream`'s (another client that
    ///   subscribes to the subject and answers): then it may or may not have stored it.
    package func publish(_ subject: String, headers: NATSHeaders, payload: [UInt8], stream: String) throws(BridgeError) -> PublishAnswer {
        let reply = try connection.request(subject, headers: headers, payload: payload, timeout: timeout)
        if reply.headers?.status == 503 { throw BridgeError("no stream takes \(subject) (is JetStream on, and the stream made?)") }
        let answer = try Self.decode(PublishAnswer.self, reply.payload, what: "the answer to a publish")
        if let error = answer.error {
            if error.errCode == JetStreamAnswer.wrongLastSequence { return answer }
            throw BridgeError("the server refused a message to \(subject): \(error.text)")
        }
        guard answer.stream == stream, let sequence = answer.seq, sequence > 0 else {
            throw BridgeError("the answer to a publish to \(subject) does not say stream \(stream) stored it")
        }
        return answer
    }

    /// The next message for the durable consumer, sent to `mailbox`, waiting at most `expiry` at the server;
    /// nil when none came. A message of an earlier pull that came late is the next one as well: the consumer
    /// hands over one at a time.
    package func next(stream: String, consumer: String, expiry: Duration, into mailbox: Mailbox) throws(BridgeError) -> NATSMessage? {
        let body = "{\"batch\":1,\"expires\":\(Int64(expiry / .nanoseconds(1)))}"
        try connection.publish(
            "$JS.API.CONSUMER.MSG.NEXT.\(stream).\(consumer)", replyTo: mailbox.subject, payload: Array(body.utf8))
        guard let message = mailbox.next(timeout: expiry + timeout) else {
            if let closed = connection.closedReason { throw closed }
            throw BridgeError("no answer from \(connection.address) to a pull for consumer \(consumer)")
        }
        switch message.headers?.status {
        case nil:
            return message
        case 404, 408:
            return nil
        case let status?:
            let text = message.headers?.statusDescription ?? ""
            throw BridgeError("the pull for consumer \(consumer) failed: \(status) \(text)")
        }
    }

    /// The stream's message `sequence`, read from the stream itself (its leader); nil when the stream no longer
    /// holds it (past its age, or removed). A message whose headers do not read (another client's, which the
    /// server stores unchecked) comes with ``NATSMessage/headerError`` set, as from a consumer, for the caller to
    /// drop: it must not stop the reading of what follows.
    /// - Throws: ``BridgeError`` when the answer is not JetStream's, or is another message than the one asked for.
    func message(_ sequence: UInt64, stream: String) throws(BridgeError) -> NATSMessage? {
        guard let (stored, message) = try stored(stream: stream, query: "{\"seq\":\(sequence)}", what: "message \(sequence)") else {
            return nil
        }
        guard stored == sequence else {
            throw BridgeError("JetStream answered a read of message \(sequence) with message \(stored)")
        }
        return message
    }

    /// The last message the stream holds on `subject`, and its stream sequence; nil when it holds none.
    func lastMessage(on subject: String, stream: String) throws(BridgeError) -> (sequence: UInt64, message: NATSMessage)? {
        let query = try Self.json(["last_by_subj": subject])
        return try stored(stream: stream, query: String(decoding: query, as: UTF8.self), what: "the last message on \(subject)")
    }

    /// A message read from the stream by `query` (JetStream's `STREAM.MSG.GET`), with its stream sequence.
    private func stored(stream: String, query: String, what: String) throws(BridgeError) -> (sequence: UInt64, message: NATSMessage)? {
        let reply = try connection.request("$JS.API.STREAM.MSG.GET.\(stream)", payload: Array(query.utf8), timeout: timeout)
        if reply.headers?.status == 503 { throw BridgeError("\(connection.address) has no JetStream (start nats-server with -js)") }
        let answer = try Self.decode(StoredMessageAnswer.self, reply.payload, what: "the answer to a message's read")
        if let error = answer.error {
            if error.errCode == JetStreamAnswer.noMessageFound { return nil }
            throw BridgeError("JetStream refused to read \(what): \(error.text)")
        }
        guard let stored = answer.message, let sequence = stored.seq, sequence > 0, let data = Data(base64Encoded: stored.data ?? "") else {
            throw BridgeError("JetStream's \(what) came without its sequence or data")
        }
        var message = NATSMessage(subject: stored.subject ?? "", sid: 0, replyTo: nil, headers: nil, payload: Array(data))
        if let encoded = stored.hdrs {
            do throws(NATSProtocolError) {
                guard let bytes = Data(base64Encoded: encoded) else { throw NATSProtocolError("headers that are not base64") }
                message.headers = try NATSHeaders(parsing: ArraySlice(bytes))
            } catch {
                message.headerError = error
            }
        }
        return (sequence, message)
    }

    /// The stream sequence of a message `consumer` of `stream` handed over, from the subject its acknowledgement
    /// goes to (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream sequence>.…`, with a domain and an account before
    /// the stream in the newer form); nil when it is not one: a message someone else published to the pull's
    /// inbox, whose acknowledgement would go where they chose.
    static func streamSequence(of message: NATSMessage, stream: String, consumer: String) -> UInt64? {
        guard let replyTo = message.replyTo, replyTo.hasPrefix("$JS.ACK.") else { return nil }
        let tokens = replyTo.split(separator: ".", omittingEmptySubsequences: false)
        let first: Int
        switch tokens.count {
        case 9: first = 2
        case 11, 12: first = 4
        default: return nil
        }
        guard tokens[first] == stream, tokens[first + 1] == consumer, let sequence = UInt64(tokens[first + 3]), sequence > 0
        else { return nil }
        return sequence
    }

    /// Tells the server that `message` was handled: it is not handed over again.
    package func acknowledge(_ message: NATSMessage) throws(BridgeError) {
        guard let replyTo = message.replyTo else { return }
        try connection.publish(replyTo, payload: Array("+ACK".utf8))
    }

    // MARK: The API's JSON

    private func call(_ api: String, body: [UInt8]?) throws(BridgeError) -> JetStreamAnswer {
        let reply = try connection.request("$JS.API.\(api)", payload: body ?? [], timeout: timeout)
        if reply.headers?.status == 503 { throw BridgeError("\(connection.address) has no JetStream (start nats-server with -js)") }
        return try Self.decode(JetStreamAnswer.self, reply.payload, what: "the answer to \(api)")
    }

    static func json<T: Encodable>(_ value: T) throws(BridgeError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw BridgeError("cannot write JSON: \(error)")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], what: String) throws(BridgeError) -> T {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(type, from: Data(bytes))
        } catch {
            throw BridgeError("\(what) is not JetStream's JSON: \(error)")
        }
    }
}

/// A stream's settings as JetStream's API takes them.
package struct StreamConfig: Encodable {
    var name: String
    var subjects: [String]
    /// `limits`: a message stays for `maxAge`, whoever took it: a consumer that passed over one (a cluster's
    /// server that lagged as it took the consumer over) can still read it from the stream. (With `interest`, the
    /// stream drops a message once every consumer is past it, the one that passed over it included.)
    var retention = "limits"
    var storage = "file"
    var numReplicas: Int
    /// In nanoseconds.
    var maxAge: Int64
    /// In nanoseconds: how long a `Nats-Msg-Id` is remembered, so that a message published again is stored once.
    var duplicateWindow: Int64
    var discard = "old"
    /// For the entries' stream: the last message of each subject only.
    var maxMsgsPerSubject: Int?

    package init(
        name: String, subjects: [String], numReplicas: Int, maxAge: Int64, duplicateWindow: Int64,
        maxMsgsPerSubject: Int? = nil
    ) {
        self.name = name
        self.subjects = subjects
        self.numReplicas = numReplicas
        self.maxAge = maxAge
        self.duplicateWindow = duplicateWindow
        self.maxMsgsPerSubject = maxMsgsPerSubject
    }
}

/// Which stream a bridge found, and how far it goes: what tells a stream deleted and made again (its numbering
/// starts at 1 again) from the one the host took from before.
package struct StreamPosition: Sendable, Equatable {
    /// When the stream was made, as the server says it (`created`); nil when it does not say.
    var created: String?
    /// The sequence of its last message (`state.last_seq`); 0 when it holds none or does not say.
    var lastSequence: UInt64
}

/// Where a consumer made anew starts.
package enum ConsumerStart: Sendable, Equatable {
    /// With what is published from now on: a host's first consumer.
    case new
    /// With the last message of each subject, then what is published: the entries' consumer, which needs only
    /// what holds now.
    case lastPerSubject
    /// With the stream's first message: a stream that is not the one the host took from (made again since).
    case all
    /// After the stream's message `sequence`, the last the host took: a consumer an operator deleted.
    case after(UInt64)
}

/// A durable consumer's settings: one message at a time, acknowledged explicitly, so that a message handed over
/// again (its bridge stopped before acknowledging it) comes before any after it.
package struct ConsumerConfig: Encodable {
    var durableName: String
    var deliverPolicy = "new"
    /// With `by_start_sequence`: the stream sequence to start with.
    var optStartSeq: UInt64?
    var ackPolicy = "explicit"
    /// In nanoseconds.
    var ackWait: Int64
    var maxAckPending = 1
    var maxDeliver = -1
    var filterSubject: String

    package init(durableName: String, ackWait: Int64, filterSubject: String, start: ConsumerStart = .new) {
        self.durableName = durableName
        self.ackWait = ackWait
        self.filterSubject = filterSubject
        switch start {
        case .new: deliverPolicy = "new"
        case .all: deliverPolicy = "all"
        case .lastPerSubject: deliverPolicy = "last_per_subject"
        case .after(let sequence):
            deliverPolicy = "by_start_sequence"
            optStartSeq = sequence &+ 1
        }
    }
}

private struct CreateConsumer: Encodable {
    var streamName: String
    var config: ConsumerConfig
}

/// What JetStream's API answers, as far as the bridge reads it: an error or not.
struct JetStreamAnswer: Decodable {
    static let streamNotFound = 10059
    static let streamNameInUse = 10058
    static let consumerNotFound = 10014
    static let noMessageFound = 10037
    static let wrongLastSequence = 10071

    struct Failure: Decodable {
        var code: Int
        var errCode: Int?
        var description: String?

        var text: String { "\(description ?? "error") (\(code)\(errCode.map { ", \($0)" } ?? ""))" }
    }

    var error: Failure?
    /// A stream's answer: when it was made, and how far it goes.
    var created: String?
    var state: StreamState?

    struct StreamState: Decodable {
        var lastSeq: UInt64?
    }

    var position: StreamPosition { StreamPosition(created: created, lastSequence: state?.lastSeq ?? 0) }

    func failure(_ what: String) -> BridgeError {
        BridgeError("JetStream refused \(what): \(error?.text ?? "no reason given")")
    }
}

/// The server's answer to reading one message of a stream.
private struct StoredMessageAnswer: Decodable {
    struct Stored: Decodable {
        var subject: String?
        var seq: UInt64?
        var hdrs: String?
        var data: String?
    }

    var message: Stored?
    var error: JetStreamAnswer.Failure?
}

/// The server's answer to a publish into a stream.
package struct PublishAnswer: Decodable {
    var stream: String?
    var seq: UInt64?
    var duplicate: Bool?
    var error: JetStreamAnswer.Failure?
}
