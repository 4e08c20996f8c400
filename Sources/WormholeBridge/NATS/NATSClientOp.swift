import Foundation

/// The operations a client sends, encoded: CONNECT, PUB, HPUB, SUB, UNSUB, PING and PONG.
///
/// Each returns the whole operation, its CRLF included; the `append…(into:)` forms write into a buffer the caller
/// reuses. Every subject, reply-to and queue group is checked before a byte is written, so that no field can
/// forge a line (a space would start another field, a CR LF another operation); payloads are framed by their
/// length and may hold anything. The server's maximum payload is the connection's to check.
enum NATSClientOp {
    /// `PING`: asks the server for a PONG (and flushes: the PONG comes after everything sent before).
    static let ping: [UInt8] = Array("PING\r\n".utf8)
    /// `PONG`: the answer to the server's PING.
    static let pong: [UInt8] = Array("PONG\r\n".utf8)

    /// `CONNECT {…}`: the first thing a client sends, after the server's INFO.
    ///
    /// Verbose and pedantic off (no +OK per operation), no TLS, headers and no-responders on (a request nobody
    /// answers gets a 503 at once instead of a timeout), `echo` as `options` says, and the name and credentials
    /// that are set. The JSON is written by JSONEncoder, so every value is escaped and none can end the line.
    static func connect(_ options: NATSConnectOptions) -> [UInt8] {
        let body = ConnectBody(
            echo: options.echo, name: options.name, user: options.user, pass: options.password,
            authToken: options.token)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // JSONEncoder fails only on a non-finite number or a value that encodes nothing; the body has neither. The
        // fallback, should it ever fail, sends the fixed parts alone.
        let json = (try? encoder.encode(body)).map { [UInt8]($0) } ?? fixedConnectJSON
        return Array("CONNECT ".utf8) + json + crlf
    }

    /// `PUB <subject> [reply-to] <#bytes>\r\n<payload>\r\n`.
    /// - Throws: when `subject` or `replyTo` is not ``NATSSubject/isValidLiteral(_:)``: empty, holding whitespace or
    ///   a control character, with an empty token, or a wildcard. Nothing is written then.
    static func pub(subject: String, replyTo: String? = nil, payload: some Collection<UInt8>)
        throws(NATSProtocolError) -> [UInt8]
    {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(subject.utf8.count + (replyTo?.utf8.count ?? 0) + payload.count + 24)
        try appendPub(into: &buffer, subject: subject, replyTo: replyTo, payload: payload)
        return buffer
    }

    /// Appends ``pub(subject:replyTo:payload:)``'s bytes to `buffer`; on a throw, `buffer` is as it was.
    static func appendPub(
        into buffer: inout [UInt8], subject: String, replyTo: String? = nil, payload: some Collection<UInt8>
    ) throws(NATSProtocolError) {
        try checkLiteral(subject, "subject")
        if let replyTo { try checkLiteral(replyTo, "reply-to") }
        buffer.append(contentsOf: pubOp)
        appendFields(into: &buffer, subject, replyTo)
        appendNumber(payload.count, into: &buffer)
        buffer.append(contentsOf: crlf)
        buffer.append(contentsOf: payload)
        buffer.append(contentsOf: crlf)
    }

    /// `HPUB <subject> [reply-to] <#header bytes> <#total bytes>\r\n<headers><payload>\r\n`.
    /// - Throws: as ``pub(subject:replyTo:payload:)``, and when `headers` does not pass
    ///   ``NATSHeaders/validate()``.
    static func hpub(subject: String, replyTo: String? = nil, headers: NATSHeaders, payload: some Collection<UInt8>)
        throws(NATSProtocolError) -> [UInt8]
    {
        var buffer: [UInt8] = []
        try appendHPub(into: &buffer, subject: subject, replyTo: replyTo, headers: headers, payload: payload)
        return buffer
    }

    /// Appends ``hpub(subject:replyTo:headers:payload:)``'s bytes to `buffer`; on a throw, `buffer` is as it was.
    static func appendHPub(
        into buffer: inout [UInt8], subject: String, replyTo: String? = nil, headers: NATSHeaders,
        payload: some Collection<UInt8>
    ) throws(NATSProtocolError) {
        try checkLiteral(subject, "subject")
        if let replyTo { try checkLiteral(replyTo, "reply-to") }
        try headers.validate()
        let block = headers.encoded()
        buffer.append(contentsOf: hpubOp)
        appendFields(into: &buffer, subject, replyTo)
        appendNumber(block.count, into: &buffer)
        buffer.append(space)
        appendNumber(block.count + payload.count, into: &buffer)
        buffer.append(contentsOf: crlf)
        buffer.append(contentsOf: block)
        buffer.append(contentsOf: payload)
        buffer.append(contentsOf: crlf)
    }

    /// `SUB <subject> [queue group] <sid>\r\n`. The subject may hold wildcards (`*` tokens, a last `>` token).
    /// - Throws: when `subject` is not ``NATSSubject/isValid(_:)``, or `queueGroup` is empty or holds whitespace
    ///   or a control character.
    static func sub(subject: String, queueGroup: String? = nil, sid: UInt64) throws(NATSProtocolError) -> [UInt8] {
        var buffer: [UInt8] = []
        try appendSub(into: &buffer, subject: subject, queueGroup: queueGroup, sid: sid)
        return buffer
    }

    /// Appends ``sub(subject:queueGroup:sid:)``'s bytes to `buffer`; on a throw, `buffer` is as it was.
    static func appendSub(into buffer: inout [UInt8], subject: String, queueGroup: String? = nil, sid: UInt64)
        throws(NATSProtocolError)
    {
        guard NATSSubject.isValid(subject) else { throw invalid(subject, "subject") }
        if let queueGroup, !NATSSubject.isValidField(queueGroup) {
            throw NATSProtocolError("queue group \(queueGroup.debugDescription) is empty or holds whitespace or a "
                + "control character")
        }
        buffer.append(contentsOf: subOp)
        appendFields(into: &buffer, subject, queueGroup)
        appendNumber(sid, into: &buffer)
        buffer.append(contentsOf: crlf)
    }

    /// `UNSUB <sid> [max]\r\n`: ends a subscription at once, or after `max` more messages. A `max` of zero or
    /// less is left out, which ends it at once too.
    static func unsub(sid: UInt64, max: Int? = nil) -> [UInt8] {
        var buffer: [UInt8] = []
        appendUnsub(into: &buffer, sid: sid, max: max)
        return buffer
    }

    /// Appends ``unsub(sid:max:)``'s bytes to `buffer`.
    static func appendUnsub(into buffer: inout [UInt8], sid: UInt64, max: Int? = nil) {
        buffer.append(contentsOf: unsubOp)
        appendNumber(sid, into: &buffer)
        if let max, max > 0 {
            buffer.append(space)
            appendNumber(max, into: &buffer)
        }
        buffer.append(contentsOf: crlf)
    }

    /// CONNECT's JSON: the fixed parts, then what the options set (absent keys are left out).
    private struct ConnectBody: Encodable {
        var verbose = false
        var pedantic = false
        var tlsRequired = false
        var lang = "swift"
        var version = "1.0"
        var `protocol` = 1
        var headers = true
        var noResponders = true
        var echo: Bool
        var name: String?
        var user: String?
        var pass: String?
        var authToken: String?

        enum CodingKeys: String, CodingKey {
            case verbose, pedantic, lang, version, `protocol`, headers, echo, name, user, pass
            case tlsRequired = "tls_required"
            case noResponders = "no_responders"
            case authToken = "auth_token"
        }
    }

    private static let fixedConnectJSON = Array(
        (#"{"echo":true,"headers":true,"lang":"swift","no_responders":true,"pedantic":false,"protocol":1,"#
            + #""tls_required":false,"verbose":false,"version":"1.0"}"#).utf8)

    private static func checkLiteral(_ subject: String, _ role: String) throws(NATSProtocolError) {
        guard NATSSubject.isValidLiteral(subject) else { throw invalid(subject, role) }
    }

    private static func invalid(_ subject: String, _ role: String) -> NATSProtocolError {
        NATSProtocolError("\(role) \(subject.debugDescription) is empty, holds whitespace or a control character, "
            + "has an empty token or a wildcard where none may be")
    }

    /// Appends each field that is present, each followed by a space.
    private static func appendFields(into buffer: inout [UInt8], _ first: String, _ second: String?) {
        buffer.append(contentsOf: first.utf8)
        buffer.append(space)
        if let second {
            buffer.append(contentsOf: second.utf8)
            buffer.append(space)
        }
    }

    /// Appends the decimal digits of `value`, without making a string.
    private static func appendNumber(_ value: UInt64, into buffer: inout [UInt8]) {
        let start = buffer.count
        var rest = value
        repeat {
            buffer.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        buffer[start...].reverse()
    }

    /// Appends the decimal digits of a count or a maximum, which are never negative here.
    private static func appendNumber(_ value: Int, into buffer: inout [UInt8]) {
        appendNumber(UInt64(clamping: value), into: &buffer)
    }

    private static let pubOp = Array("PUB ".utf8)
    private static let hpubOp = Array("HPUB ".utf8)
    private static let subOp = Array("SUB ".utf8)
    private static let unsubOp = Array("UNSUB ".utf8)
    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let space = UInt8(ascii: " ")
}
