import Foundation
import Testing
@testable import WormholeBridge
import WormholeTestSupport

@Suite("NATS: the operations a client writes", .throttled)
struct NATSClientOpTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("PUB, HPUB, SUB, UNSUB, PING and PONG are the exact bytes of the protocol")
    func exactBytes() throws {
        #expect(text(try NATSClientOp.pub(subject: "a.b", payload: Array("hello".utf8))) == "PUB a.b 5\r\nhello\r\n")
        #expect(text(try NATSClientOp.pub(subject: "a.b", replyTo: "_INBOX.1", payload: [UInt8]()))
            == "PUB a.b _INBOX.1 0\r\n\r\n")
        var headers = NATSHeaders()
        try headers.set("Bar", "Baz")
        #expect(text(try NATSClientOp.hpub(subject: "a.b", replyTo: "r", headers: headers, payload: Array("hello".utf8)))
            == "HPUB a.b r 22 27\r\nNATS/1.0\r\nBar: Baz\r\n\r\nhello\r\n")
        #expect(text(try NATSClientOp.hpub(subject: "FOO", headers: NATSHeaders(), payload: [UInt8]()))
            == "HPUB FOO 12 12\r\nNATS/1.0\r\n\r\n\r\n")
        #expect(text(try NATSClientOp.sub(subject: "bridge.>", sid: 1)) == "SUB bridge.> 1\r\n")
        #expect(text(try NATSClientOp.sub(subject: "a.*.c", queueGroup: "workers", sid: 18_446_744_073_709_551_615))
            == "SUB a.*.c workers 18446744073709551615\r\n")
        #expect(text(NATSClientOp.unsub(sid: 0)) == "UNSUB 0\r\n")
        #expect(text(NATSClientOp.unsub(sid: 7, max: 1)) == "UNSUB 7 1\r\n")
        #expect(text(NATSClientOp.unsub(sid: 7, max: 0)) == "UNSUB 7\r\n")
        #expect(text(NATSClientOp.unsub(sid: 7, max: -3)) == "UNSUB 7\r\n")
        #expect(text(NATSClientOp.ping) == "PING\r\n" && text(NATSClientOp.pong) == "PONG\r\n")
        let payload = Data("binary \r\n\0".utf8)
        #expect(try NATSClientOp.pub(subject: "x", payload: payload) == Array("PUB x 10\r\n".utf8) + payload + [13, 10])
    }

    /// CONNECT's JSON, decoded.
    private func connectJSON(_ options: NATSConnectOptions) throws -> [String: Any] {
        let bytes = NATSClientOp.connect(options)
        #expect(bytes.starts(with: Array("CONNECT {".utf8)) && bytes.suffix(3) == [0x7D, 0x0D, 0x0A])
        // One line: no CR or LF before the end, whatever the values held.
        #expect(!bytes.dropLast(2).contains(0x0D) && !bytes.dropLast(2).contains(0x0A))
        let object = try JSONSerialization.jsonObject(with: Data(bytes.dropFirst(8).dropLast(2)))
        return try #require(object as? [String: Any])
    }

    @Test("CONNECT says what this client is and does, and only the credentials that are set")
    func connect() throws {
        let plain = try connectJSON(NATSConnectOptions())
        #expect(plain["verbose"] as? Bool == false && plain["pedantic"] as? Bool == false)
        #expect(plain["tls_required"] as? Bool == false && plain["lang"] as? String == "swift")
        #expect(plain["version"] as? String == "1.0" && plain["protocol"] as? Int == 1)
        #expect(plain["headers"] as? Bool == true && plain["no_responders"] as? Bool == true)
        #expect(plain["echo"] as? Bool == true)
        #expect(Set(plain.keys) == ["verbose", "pedantic", "tls_required", "lang", "version", "protocol", "headers",
                                     "no_responders", "echo"])
        let nasty = "a\"b\\c\r\nPUB x 1\r\n\u{2028}/é🚀\u{0}"
        let full = try connectJSON(NATSConnectOptions(name: nasty, user: "u\r\n", password: nasty, token: "t", echo: false))
        #expect(full["name"] as? String == nasty && full["pass"] as? String == nasty)
        #expect(full["user"] as? String == "u\r\n" && full["auth_token"] as? String == "t")
        #expect(full["echo"] as? Bool == false)
    }

    /// Subjects nobody may publish to: each would forge a field or a line, or is not a literal subject.
    private let forged = [
        "", " ", "a b", "a\tb", "a\r\nPUB x 1", "a\n", "a\r", "a\u{0}b", "a\u{7F}", "a..b", ".a", "a.", ".", "*",
        "a.*", ">", "a.>", "a\u{00A0}b", "a\u{2028}b", "a\u{85}b", "a\u{3000}",
    ]

    @Test("a forged or malformed subject or reply-to is refused, and nothing is written")
    func forgedSubjects() {
        for subject in forged {
            var buffer = Array("kept".utf8)
            #expect(throws: NATSProtocolError.self, "\(subject.debugDescription)") {
                try NATSClientOp.appendPub(into: &buffer, subject: subject, payload: [UInt8]())
            }
            #expect(throws: NATSProtocolError.self) {
                try NATSClientOp.appendPub(into: &buffer, subject: "ok", replyTo: subject, payload: [UInt8]())
            }
            #expect(throws: NATSProtocolError.self) {
                try NATSClientOp.appendHPub(into: &buffer, subject: subject, headers: NATSHeaders(), payload: [UInt8]())
            }
            #expect(throws: NATSProtocolError.self) {
                try NATSClientOp.hpub(subject: "ok", replyTo: subject, headers: NATSHeaders(), payload: [UInt8]())
            }
            #expect(buffer == Array("kept".utf8))
        }
        #expect(throws: NATSProtocolError(
            #"subject "a b" is empty, holds whitespace or a control character, has an empty token or a wildcard where none may be"#
        )) { try NATSClientOp.pub(subject: "a b", payload: [UInt8]()) }
    }

    @Test("SUB takes wildcards where the server does, and refuses the rest")
    func subscriptions() throws {
        for subject in ["a.*", "a.>", ">", "*", "*.*.>", "a*b.c>d", "café.x"] {
            #expect(throws: Never.self, "\(subject)") { try NATSClientOp.sub(subject: subject, sid: 1) }
        }
        for subject in forged where !["*", "a.*", ">", "a.>"].contains(subject) {
            #expect(throws: NATSProtocolError.self, "\(subject.debugDescription)") {
                try NATSClientOp.sub(subject: subject, sid: 1)
            }
        }
        for subject in ["a.>.b", ">.a", "a.>.>"] {
            #expect(throws: NATSProtocolError.self) { try NATSClientOp.sub(subject: subject, sid: 1) }
        }
        for group in ["", "a b", "a\r\n", "a\t"] {
            #expect(throws: NATSProtocolError.self) { try NATSClientOp.sub(subject: "a", queueGroup: group, sid: 1) }
        }
    }

    @Test("HPUB refuses headers that would forge a line, even set past NATSHeaders.set")
    func forgedHeaders() {
        var headers = NATSHeaders()
        headers.fields = [(name: "A", value: "b\r\nPUB evil 1\r\nx")]
        var buffer: [UInt8] = []
        #expect(throws: NATSProtocolError.self) {
            try NATSClientOp.appendHPub(into: &buffer, subject: "a", headers: headers, payload: [UInt8]())
        }
        #expect(buffer.isEmpty)
    }

    /// Replaces a client's PUB or HPUB line with the MSG or HMSG line the server would deliver on `sid`.
    private func delivered(_ published: [UInt8], sid: UInt64) throws -> [UInt8] {
        let lineEnd = try #require(published.firstIndex(of: 0x0D))
        var fields = String(decoding: published[..<lineEnd], as: UTF8.self).split(separator: " ").map(String.init)
        fields[0] = fields[0] == "PUB" ? "MSG" : "HMSG"
        fields.insert(String(sid), at: 2)
        return Array(fields.joined(separator: " ").utf8) + published[lineEnd...]
    }

    @Test("what the encoders write reads back through the parser as the server delivers it")
    func roundTrip() throws {
        var generator = SeededGenerator(seed: 11)
        var stream: [UInt8] = []
        var expected: [NATSServerOp] = []
        for index in 0..<500 {
            let subject = NATSSubject.tail(for: "round.\(index).\(["é", "a b", "..", "*"][index % 4])")
            let replyTo: String? = index % 3 == 0 ? "_INBOX.\(index)" : nil
            let payload = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            var headers: NATSHeaders?
            if index % 2 == 0 {
                var built = NATSHeaders()
                try built.set("Wormhole-Name", "n\(index) é")
                try built.append("Nats-Msg-Id", "\(index)")
                if index % 10 == 0 {
                    built.status = 408
                    built.statusDescription = "Request Timeout"
                }
                headers = built
            }
            let published = try headers.map {
                try NATSClientOp.hpub(subject: subject, replyTo: replyTo, headers: $0, payload: payload)
            } ?? NATSClientOp.pub(subject: subject, replyTo: replyTo, payload: payload)
            stream += try delivered(published, sid: UInt64(index))
            expected.append(.message(NATSMessage(
                subject: subject, sid: UInt64(index), replyTo: replyTo, headers: headers, payload: payload)))
        }
        let expectedParse = NATSParse(ops: expected, error: nil)
        #expect(NATSTestFeed.parse(stream) == expectedParse)
        let chunks = stride(from: 0, to: stream.count, by: 1_000).map { stream[$0..<min(stream.count, $0 + 1_000)] }
        #expect(NATSTestFeed.parse(chunks) == expectedParse)
    }
}
