import Foundation
import Testing
@testable import WormholeBridge
import WormholeTestSupport

@Suite("NATS: the parser of what a server sends", .throttled)
struct NATSParserTests {
    /// INFO as nats-server 2.9.10 sends it, its trailing space included.
    private let realInfo = Array(
        (#"INFO {"server_id":"NDYY2WAWJ2OK4PTAWRONRZG2UHD5XRZGMNF4G65K44GSHDTKNABPYOSG","server_name":"#
            + #""NDYY2WAWJ2OK4PTAWRONRZG2UHD5XRZGMNF4G65K44GSHDTKNABPYOSG","version":"2.9.10","proto":1,"#
            + #""go":"go1.19.8","host":"0.0.0.0","port":14222,"headers":true,"max_payload":1048576,"#
            + #""jetstream":true,"client_id":4,"client_ip":"127.0.0.1"} "# + "\r\n").utf8)

    /// Every operation, as a server writes them (and as it may: other cases, tabs, runs of spaces).
    private var everyOp: [UInt8] {
        realInfo + Array(
            ("PING\r\nPONG\r\n+OK\r\nMSG a.b 1 5\r\nhello\r\nMSG a.b 22 _INBOX.x.1 0\r\n\r\n"
                + "MSG _INBOX.x.4 9  28\r\n{\"stream\":\"BRIDGE\", \"seq\":1}\r\n"
                + "msg\ta.b\t\t7 \t 3\r\nabc\r\n"
                + "HMSG t.h 2 22 27\r\nNATS/1.0\r\nBar: Baz\r\n\r\nhello\r\n"
                + "HMSG _INBOX.x.1 9 16 16\r\nNATS/1.0 503\r\n\r\n\r\n"
                + "hmsg r 3 reply.to 81 84\r\nNATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\n"
                + "Nats-Pending-Bytes: 0\r\n\r\nxyz\r\n"
                + "ping\r\nPong \r\n+ok\r\n-ERR 'Authorization Violation'\r\n-err plain words\r\n").utf8)
    }

    private func message(
        _ subject: String, _ sid: UInt64, _ payload: String, replyTo: String? = nil, headers: NATSHeaders? = nil
    ) -> NATSServerOp {
        .message(NATSMessage(subject: subject, sid: sid, replyTo: replyTo, headers: headers, payload: Array(payload.utf8)))
    }

    private func headers(_ status: Int? = nil, _ description: String? = nil, _ fields: [(String, String)] = [])
        -> NATSHeaders
    {
        var headers = NATSHeaders()
        headers.status = status
        headers.statusDescription = description
        headers.fields = fields.map { (name: $0.0, value: $0.1) }
        return headers
    }

    private var everyOpExpected: [NATSServerOp] {
        [
            .info(NATSServerInfo(
                serverID: "NDYY2WAWJ2OK4PTAWRONRZG2UHD5XRZGMNF4G65K44GSHDTKNABPYOSG", version: "2.9.10",
                maxPayload: 1_048_576, headers: true, authRequired: false, proto: 1, jetStream: true, connectURLs: [])),
            .ping, .pong, .ok,
            message("a.b", 1, "hello"),
            message("a.b", 22, "", replyTo: "_INBOX.x.1"),
            message("_INBOX.x.4", 9, #"{"stream":"BRIDGE", "seq":1}"#),
            message("a.b", 7, "abc"),
            message("t.h", 2, "hello", headers: headers(nil, nil, [("Bar", "Baz")])),
            message("_INBOX.x.1", 9, "", headers: headers(503)),
            message("r", 3, "xyz", replyTo: "reply.to", headers: headers(408, "Request Timeout",
                [("Nats-Pending-Messages", "2"), ("Nats-Pending-Bytes", "0")])),
            .ping, .pong, .ok, .error("Authorization Violation"), .error("plain words"),
        ]
    }

    @Test("every operation reads, whole, cut at every byte, and a byte at a time")
    func everyOperation() {
        let bytes = everyOp
        let whole = NATSTestFeed.parse(bytes)
        #expect(whole == NATSParse(ops: everyOpExpected, error: nil))
        for cut in 0...bytes.count {
            #expect(NATSTestFeed.parse(bytes, cutAt: cut) == whole, "cut at \(cut)")
        }
        #expect(NATSTestFeed.parseBytewise(bytes) == whole)
    }

    @Test("the real server's INFO decodes to what it says")
    func realInfoLine() throws {
        let parse = NATSTestFeed.parse(realInfo)
        guard case .info(let info) = try #require(parse.ops.first) else {
            Issue.record("not INFO: \(parse)")
            return
        }
        #expect(info.version == "2.9.10" && info.maxPayload == 1 << 20 && info.headers && info.jetStream)
        #expect(info.proto == 1 && !info.authRequired && info.connectURLs.isEmpty)
    }

    @Test("INFO fields that are absent take their defaults, and unknown ones are ignored")
    func infoDefaults() {
        let parse = NATSTestFeed.parse(Array("INFO {\"x\":[1,{}],\"auth_required\":true,\"connect_urls\":[\"a:1\"]}\r\n".utf8))
        #expect(parse.ops == [.info(NATSServerInfo(
            serverID: "", version: "", maxPayload: 1 << 20, headers: false, authRequired: true, proto: 0,
            jetStream: false, connectURLs: ["a:1"]))])
    }

    @Test("the no-responders answer: HMSG with status 503, its header only, no payload")
    func noResponders() throws {
        let parse = NATSTestFeed.parse(Array("HMSG _INBOX.x.1 9 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\n".utf8))
        #expect(parse.error == nil)
        guard case .message(let reply) = try #require(parse.ops.first) else {
            Issue.record("not a message")
            return
        }
        #expect(reply.headers?.status == 503 && reply.headers?.statusDescription == nil)
        #expect(reply.payload.isEmpty && reply.replyTo == nil && reply.headerError == nil)
        #expect(parse.ops.last == .pong)
    }

    @Test("a 1 MiB payload, the server's default maximum, arrives whole; a byte more is refused")
    func largePayload() {
        var generator = SeededGenerator(seed: 42)
        let payload = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let bytes = Array("MSG big 1 \(1 << 20)\r\n".utf8) + payload + Array("\r\nPING\r\n".utf8)
        let chunks = stride(from: 0, to: bytes.count, by: 65_536).map { bytes[$0..<min(bytes.count, $0 + 65_536)] }
        let expected = NATSParse(
            ops: [.message(NATSMessage(subject: "big", sid: 1, replyTo: nil, headers: nil, payload: payload)), .ping])
        #expect(NATSTestFeed.parse(bytes) == expected)
        #expect(NATSTestFeed.parse(chunks) == expected)
        let over = NATSTestFeed.parse(Array("MSG big 1 \((1 << 20) + 1)\r\n".utf8))
        #expect(over.error?.message == "MSG payload of 1048577 bytes over the server's maximum of 1048576")
    }

    @Test("the maximum payload follows what INFO said, for MSG and for HMSG's total")
    func settableMaximum() {
        var parser = NATSParser()
        parser.maximumPayload = 10
        parser.append(Array("MSG a 1 10\r\n0123456789\r\nHMSG a 1 10 11\r\n".utf8))
        #expect((try? parser.next()) == message("a", 1, "0123456789"))
        #expect(throws: NATSProtocolError("HMSG payload of 11 bytes over the server's maximum of 10")) {
            try parser.next()
        }
    }

    @Test("a max_payload past what nats-server allows is taken as 64 MiB; a claim past it is refused, not reserved")
    func absurdMaximum() throws {
        for said in ["9223372036854775807", "4611686018427387904", "67108865"] {
            let info = try NATSServerInfo(json: Array("{\"max_payload\":\(said)}".utf8))
            #expect(info.maxPayload == 64 << 20, "\(said)")
        }
        var parser = NATSParser()
        parser.maximumPayload = 64 << 20
        // A claim within the maximum waits for its bytes, with little reserved for them.
        parser.append(Array("MSG a 1 \(64 << 20)\r\n".utf8))
        #expect(try parser.next() == nil)
        parser = NATSParser()
        parser.maximumPayload = 64 << 20
        parser.append(Array("MSG a 1 1099511627776\r\n".utf8))
        #expect(throws: NATSProtocolError("MSG payload of 1099511627776 bytes over the server's maximum of 67108864")) {
            try parser.next()
        }
    }

    @Test("after an error the parser stays unusable: the same error again, and appended bytes are ignored")
    func unusableAfterError() {
        var parser = NATSParser()
        parser.append(Array("BOGUS\r\nPING\r\n".utf8))
        let error = NATSProtocolError(#"unknown operation "BOGUS""#)
        #expect(throws: error) { try parser.next() }
        parser.append(Array("PING\r\n".utf8))
        #expect(throws: error) { try parser.next() }
    }

    /// Bytes every parser must refuse, and what it says, each checked whole, cut everywhere and bytewise.
    private let refusals: [(String, String)] = [
        ("FOO bar\r\n", #"unknown operation "FOO""#),
        ("\r\n", #"unknown operation """#),
        (" PING\r\n", #"unknown operation """#),
        ("PINGX\r\n", #"unknown operation "PINGX""#),
        ("PING\n", "control line ending with a bare LF"),
        ("PING 1\r\n", "PING with arguments"),
        ("PONG x\r\n", "PONG with arguments"),
        ("+OK then\r\n", "+OK with arguments"),
        ("INFO\r\n", "INFO without JSON"),
        ("INFO  \t\r\n", "INFO without JSON"),
        ("MSG a 1\r\n", "MSG with 2 arguments"),
        ("MSG a 1 r s 5\r\n", "MSG with 5 arguments"),
        ("MSG a 1 r s t u 5\r\n", "MSG with over 5 arguments"),
        ("HMSG a 1 5\r\n", "HMSG with 3 arguments"),
        ("MSG a 1 -5\r\nhello\r\n", "MSG whose size is not a decimal number that fits"),
        ("MSG a 1 +5\r\nhello\r\n", "MSG whose size is not a decimal number that fits"),
        ("MSG a 1 5x\r\nhello\r\n", "MSG whose size is not a decimal number that fits"),
        ("MSG a 1 99999999999999999999\r\n", "MSG whose size is not a decimal number that fits"),
        ("MSG a 1 9223372036854775808\r\n", "MSG whose size is not a decimal number that fits"),
        ("MSG a x 5\r\nhello\r\n", "MSG whose subscription id is not a number"),
        ("MSG a -1 5\r\nhello\r\n", "MSG whose subscription id is not a number"),
        ("MSG a 18446744073709551616 5\r\nhello\r\n", "MSG whose subscription id is not a number"),
        ("HMSG a 1 x 5\r\n", "HMSG whose header size is not a decimal number that fits"),
        ("HMSG a 1 6 5\r\n", "HMSG header bytes (6) over its total bytes (5)"),
        ("MSG a 1 9223372036854775807\r\n", "MSG payload of 9223372036854775807 bytes over the server's maximum of 1048576"),
        ("MSG a 1 5\r\nhelloXY", "MSG payload not followed by CRLF"),
        ("MSG a 1 5\r\nhello\n\r", "MSG payload not followed by CRLF"),
        ("HMSG a 1 12 12\r\nNATS/1.0\r\n\r\n\r\r", "HMSG payload not followed by CRLF"),
    ]

    @Test("garbage, malformed numbers and broken framing are refused with a clear message")
    func refused() {
        for (input, message) in refusals {
            let bytes = Array(input.utf8)
            let whole = NATSTestFeed.parse(bytes)
            #expect(whole.error?.message == message, "\(input.debugDescription)")
            for cut in 0...bytes.count { #expect(NATSTestFeed.parse(bytes, cutAt: cut) == whole) }
            #expect(NATSTestFeed.parseBytewise(bytes) == whole)
        }
    }

    @Test("INFO whose JSON does not decode is refused")
    func badInfo() {
        for json in [
            "{", "[1]", "\"x\"", #"{"max_payload":"big"}"#, #"{"max_payload":0}"#, #"{"max_payload":-1}"#,
            #"{"max_payload":1.5}"#, #"{"headers":1}"#, #"{"connect_urls":"a"}"#,
        ] {
            let error = NATSTestFeed.parse(Array("INFO \(json)\r\n".utf8)).error
            #expect(error?.message.hasPrefix("INFO whose JSON does not decode") == true, "\(json)")
        }
    }

    @Test("a control line is limited with or without its CRLF, and the limit is exact")
    func controlLineLimit() {
        let limit = 64
        let atLimit = Array(("-ERR '" + String(repeating: "x", count: limit - 7) + "'").utf8)
        #expect(atLimit.count == limit)
        #expect(NATSTestFeed.parse(atLimit + [13, 10], maximumControlLine: limit).ops.count == 1)
        let over = NATSProtocolError("control line over 64 bytes")
        #expect(NATSTestFeed.parse(atLimit + [0x78, 13, 10], maximumControlLine: limit).error == over)
        // Without a CRLF, refused as soon as the line can no longer fit, not after the whole stream is buffered.
        #expect(NATSTestFeed.parse(atLimit + [13], maximumControlLine: limit).error == nil)
        #expect(NATSTestFeed.parse(atLimit + [0x78, 0x78], maximumControlLine: limit).error == over)
        let endless = NATSTestFeed.parseBytewise(Array(repeating: 0x41, count: 100), maximumControlLine: limit)
        #expect(endless.error == over && endless.ops.isEmpty)
        #expect(NATSTestFeed.parse(Array(repeating: 0x41, count: 4098)).error?.message == "control line over 4096 bytes")
    }

    @Test("what the server passes on from other clients reads: odd subjects, headers that do not parse")
    func relayedFromOtherClients() throws {
        // Captured from nats-server 2.9.10: it delivers these as published, so none may close our connection.
        let bytes: [UInt8] = Array("HMSG t.a 1 5 7\r\nabcde12\r\nMSG t.\u{1}x 1 1\r\nz\r\nMSG t.a\rb 1 1\r\nz\r\n".utf8)
            + [0x4D, 0x53, 0x47, 0x20, 0x74, 0x2E, 0xFF] + Array(" 1 1\r\nz\r\nHMSG t.e 1 10 10\r\nNATS/1.0\r\n\r\n".utf8)
            + Array("MSG t.café 1 ré 2\r\n\r\n\r\nPING\r\n".utf8)
        let parse = NATSTestFeed.parse(bytes)
        #expect(parse.error == nil)
        #expect(parse.ops.count == 7)
        for cut in 0...bytes.count { #expect(NATSTestFeed.parse(bytes, cutAt: cut) == parse) }
        guard case .message(let garbled) = try #require(parse.ops.first) else { return }
        #expect(garbled.headers == nil && garbled.payload == Array("12".utf8))
        #expect(garbled.headerError?.message == "headers not starting with NATS/1.0")
        #expect(parse.ops[1] == message("t.\u{1}x", 1, "z"))
        #expect(parse.ops[2] == message("t.a\rb", 1, "z"))
        #expect(parse.ops[3] == message("t.\u{FFFD}", 1, "z"))
        // Its 10 header bytes are `NATS/1.0\r\n` alone, without the empty line that ends a header block.
        guard case .message(let unended) = parse.ops[4] else { return }
        #expect(unended.headers == nil && unended.headerError?.message == "headers without their closing empty line")
        #expect(parse.ops[5] == message("t.café", 1, "\r\n", replyTo: "ré"))
        #expect(parse.ops[6] == .ping)
    }

    @Test("HMSG whose header block is empty or cut short is delivered with its header error")
    func headerErrors() throws {
        let parse = NATSTestFeed.parse(Array("HMSG a 1 0 2\r\nhi\r\nHMSG a 1 10 10\r\nNATS/1.0\r\n\r\n".utf8))
        #expect(parse.error == nil && parse.ops.count == 2)
        guard case .message(let empty) = parse.ops[0], case .message(let cut) = parse.ops[1] else {
            Issue.record("not messages: \(parse)")
            return
        }
        #expect(empty.headerError != nil && empty.headers == nil && empty.payload == Array("hi".utf8))
        #expect(cut.headerError?.message == "headers without their closing empty line")
    }

    @Test("random bytes and mutations of real streams are refused or read, never a trap")
    func garbage() {
        var generator = SeededGenerator(seed: 7)
        var refused = 0
        let base = everyOp
        for round in 0..<3_000 {
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = base
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] = [0x20, 0x09, 0x0D, 0x0A, 0x30, 0x39, 0x2D, 0xFF].randomElement(using: &generator) ?? 0
                }
            }
            let whole = NATSTestFeed.parse(bytes, maximumControlLine: 512, maximumPayload: 4096)
            if whole.error != nil { refused += 1 }
            let cut = Int.random(in: 0...bytes.count, using: &generator)
            #expect(NATSTestFeed.parse(bytes, cutAt: cut, maximumControlLine: 512, maximumPayload: 4096) == whole)
        }
        #expect(refused > 1_000)
    }

    @Test("many operations in large reads, the buffer compacted as it goes, all come out in order")
    func manyInLargeReads() {
        var bytes: [UInt8] = []
        var expected: [NATSServerOp] = []
        for index in 0..<5_000 {
            let payload = String(repeating: "p", count: index % 300)
            bytes += Array("MSG s.\(index) \(index) \(payload.utf8.count)\r\n\(payload)\r\n".utf8)
            expected.append(message("s.\(index)", UInt64(index), payload))
            if index % 7 == 0 {
                bytes += Array("PING\r\n".utf8)
                expected.append(.ping)
            }
        }
        for size in [1_000, 4_096, 65_536, 333] {
            let chunks = stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min(bytes.count, $0 + size)] }
            #expect(NATSTestFeed.parse(chunks) == NATSParse(ops: expected, error: nil), "reads of \(size)")
        }
    }
}
