import Foundation
import Testing
@testable import WormholeBridge

@Suite("NATS: message headers", .throttled)
struct NATSHeadersTests {
    private func parse(_ text: String) throws(NATSProtocolError) -> NATSHeaders {
        try NATSHeaders(parsing: Array(text.utf8)[...])
    }

    @Test("a status, its description and ordered fields read as the server writes them")
    func reads() throws {
        let timeout = try parse("NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n")
        #expect(timeout.status == 408 && timeout.statusDescription == "Request Timeout")
        #expect(timeout.fields.map(\.name) == ["Nats-Pending-Messages", "Nats-Pending-Bytes"])
        #expect(timeout["nats-pending-messages"] == "2" && timeout["NATS-PENDING-BYTES"] == "0")
        let noResponders = try parse("NATS/1.0 503\r\n\r\n")
        #expect(noResponders.status == 503 && noResponders.statusDescription == nil && noResponders.fields.isEmpty)
        let plain = try parse("NATS/1.0\r\nA: 1\r\nB:2\r\na:\t 3 \t\r\nEmpty:\r\nUrl: http://x:1/y\r\n\r\n")
        #expect(plain.status == nil && plain.statusDescription == nil)
        #expect(plain.values("A") == ["1", "3"] && plain["b"] == "2" && plain["empty"] == "")
        #expect(plain["Url"] == "http://x:1/y" && plain["missing"] == nil)
        #expect(try parse("NATS/1.0  \r\n\r\n") == NATSHeaders())
        #expect(try parse("NATS/1.0\t404\tNo Messages\r\n\r\n").statusDescription == "No Messages")
    }

    @Test("header blocks that do not read are refused with what was wrong")
    func refusals() {
        let cases: [(String, String)] = [
            ("", "headers not starting with NATS/1.0"),
            ("NATS/1.", "headers not starting with NATS/1.0"),
            ("NATS/1.0\r\n", "headers without their closing empty line"),
            ("NATS/1.0\r\nA: b\r\n", "headers without their closing empty line"),
            ("NATS/1.0\r\nA: b", "headers without their closing empty line"),
            ("NATS/1.1\r\n\r\n", "headers not starting with NATS/1.0"),
            ("nats/1.0\r\n\r\n", "headers not starting with NATS/1.0"),
            ("NATS/1.0503\r\n\r\n", "headers not starting with NATS/1.0"),
            ("NATS/1.0 50\r\n\r\n", "header status is not three digits from 100 to 999"),
            ("NATS/1.0 5034\r\n\r\n", "header status is not three digits from 100 to 999"),
            ("NATS/1.0 099\r\n\r\n", "header status is not three digits from 100 to 999"),
            ("NATS/1.0 abc\r\n\r\n", "header status is not three digits from 100 to 999"),
            ("NATS/1.0\r\nNo colon\r\n\r\n", "header line without ':'"),
            ("NATS/1.0\r\n: empty name\r\n\r\n", "header name empty or holding whitespace or control characters"),
            ("NATS/1.0\r\nA b: c\r\n\r\n", "header name empty or holding whitespace or control characters"),
            ("NATS/1.0\r\n folded: c\r\n\r\n", "header name empty or holding whitespace or control characters"),
            ("NATS/1.0\r\nA: b\nC: d\r\n\r\n", "header line holding a bare LF"),
            ("NATS/1.0\r\nA: b\rC: d\r\n\r\n", "header line holding a bare CR"),
            ("NATS/1.0\r\n\r\nextra", "headers with bytes after their closing empty line"),
            ("NATS/1.0\r\n\r\n\r\n", "headers with bytes after their closing empty line"),
        ]
        for (input, message) in cases {
            #expect(throws: NATSProtocolError(message), "\(input.debugDescription)") { try parse(input) }
        }
    }

    @Test("set replaces the first field of a name in place and drops the others; append keeps them")
    func setAndAppend() throws {
        var headers = NATSHeaders()
        try headers.append("A", "1")
        try headers.append("B", "2")
        try headers.append("a", "3")
        try headers.set("A", "x")
        #expect(headers.fields.map(\.name) == ["A", "B"] && headers.fields.map(\.value) == ["x", "2"])
        try headers.set("C", "3")
        #expect(headers["c"] == "3" && headers.fields.count == 3)
        headers.remove("b")
        #expect(headers.fields.map(\.name) == ["A", "C"])
    }

    @Test("a name or value that would forge a line is refused, and never written")
    func forgeries() {
        var headers = NATSHeaders()
        for (name, value) in [
            ("A", "b\r\nInjected: yes"), ("A", "b\n"), ("A", "b\r"), ("A: b\r\nC", "d"), ("A B", "c"), ("A\tB", "c"),
            ("", "c"), ("A:", "c"), ("Ä", "c"), ("A\u{0}", "c"),
        ] {
            #expect(throws: NATSProtocolError.self) { try headers.set(name, value) }
            #expect(throws: NATSProtocolError.self) { try headers.append(name, value) }
        }
        #expect(headers.fields.isEmpty)
        // Assigned directly, past `set`: validate refuses, and the encoding leaves the field out.
        headers.fields = [(name: "Good", value: "1"), (name: "Bad", value: "x\r\nInjected: yes"), (name: "B d", value: "")]
        headers.status = 503
        headers.statusDescription = "No\r\nInjected: yes"
        #expect(throws: NATSProtocolError.self) { try headers.validate() }
        #expect(headers.encoded() == Array("NATS/1.0 503\r\nGood: 1\r\n\r\n".utf8))
        headers.statusDescription = nil
        headers.status = 1000
        #expect(throws: NATSProtocolError("header status 1000 is not three digits from 100 to 999")) {
            try headers.validate()
        }
        #expect(headers.encoded() == Array("NATS/1.0\r\nGood: 1\r\n\r\n".utf8))
        headers.status = nil
        headers.statusDescription = "orphan"
        #expect(throws: NATSProtocolError("header status description without a status")) { try headers.validate() }
    }

    @Test("encoded headers are exact and read back equal")
    func roundTrip() throws {
        var headers = NATSHeaders()
        try headers.set("Bar", "Baz")
        #expect(headers.encoded() == Array("NATS/1.0\r\nBar: Baz\r\n\r\n".utf8))
        #expect(headers.encoded().count == 22)
        try headers.append("Nats-Msg-Id", "é 🚀 : x")
        headers.status = 408
        headers.statusDescription = "Request Timeout"
        try headers.validate()
        #expect(try NATSHeaders(parsing: headers.encoded()[...]) == headers)
        #expect(NATSHeaders().encoded() == Array("NATS/1.0\r\n\r\n".utf8))
        #expect(try NATSHeaders(parsing: NATSHeaders().encoded()[...]) == NATSHeaders())
    }

    @Test("equality compares status, description and fields in order")
    func equality() throws {
        var a = NATSHeaders()
        try a.append("A", "1")
        try a.append("B", "2")
        var b = NATSHeaders()
        try b.append("B", "2")
        try b.append("A", "1")
        #expect(a != b)
        b.fields.reverse()
        #expect(a == b)
        b.status = 503
        #expect(a != b)
        a.status = 503
        a.statusDescription = "x"
        #expect(a != b)
        var c = a
        c.fields[0].name = "a"
        #expect(a != c)
    }
}
