import Foundation

/// An incremental parser of what a NATS server sends: bytes in, whole operations out.
///
/// The connection appends what each read gave and calls ``next()`` until it returns nil, then reads again. The
/// parser keeps the bytes not yet read in one buffer with a read index, and moves them to its front only once half
/// of it is read. A message's headers and payload go straight into the arrays the message keeps: once the control
/// line is read, the bytes that follow are copied there and nowhere else.
///
/// What it refuses it throws, never traps on, and never allocates past its limits for: a control line longer than
/// `maximumControlLine` bytes, a payload over `maximumPayload`, an unknown operation, a count that is not a
/// decimal number, headers longer than their message, a payload not followed by CRLF, INFO whose JSON does not
/// decode. **After a throw the parser is unusable**: the stream is out of step, so the connection closes; every
/// later ``next()`` throws the same error, and `append` ignores what it is given.
///
/// Not errors: a subject holding control characters or bytes that are not UTF-8 (the server passes on what any
/// client published; they read as U+FFFD), and headers that do not read (``NATSMessage/headerError``).
struct NATSParser: Sendable {
    /// The longest control line (the line before a payload, or INFO's whole line), CRLF aside.
    var maximumControlLine: Int
    /// The largest message (headers and payload together), as the server's INFO says (`max_payload`).
    var maximumPayload: Int

    /// The bytes appended and not yet read: those before `readIndex` are read.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Where the search for the end of a control line goes on: the bytes from `readIndex` to here hold no LF.
    private var scanIndex = 0
    /// The message whose control line is read and whose headers and payload are still arriving.
    private var pending: PendingMessage?
    /// What made the parser unusable.
    private var failure: NATSProtocolError?

    init(maximumControlLine: Int = 4096, maximumPayload: Int = 1 << 20) {
        self.maximumControlLine = maximumControlLine
        self.maximumPayload = maximumPayload
    }

    /// Adds bytes the server sent. Nothing is parsed until ``next()``.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !bytes.isEmpty else { return }
        var rest = bytes
        // A message's bytes go straight into it when nothing waits before them.
        if readIndex == buffer.count, var message = pending {
            pending = nil
            let taken = message.take(from: rest)
            pending = message
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            if rest.isEmpty { return }
        }
        compact()
        buffer.append(contentsOf: rest.assumingMemoryBound(to: UInt8.self))
    }

    /// Adds bytes the server sent. Nothing is parsed until ``next()``.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next whole operation, or nil when more bytes are needed.
    /// - Throws: ``NATSProtocolError`` for bytes that are not the protocol (see the type's summary); the parser is
    ///   unusable after, and throws it again on every call.
    mutating func next() throws(NATSProtocolError) -> NATSServerOp? {
        if let failure { throw failure }
        do throws(NATSProtocolError) {
            return try parseNext()
        } catch {
            failure = error
            buffer = []
            readIndex = 0
            scanIndex = 0
            pending = nil
            throw error
        }
    }

    private mutating func parseNext() throws(NATSProtocolError) -> NATSServerOp? {
        while true {
            if var message = pending {
                pending = nil
                let start = readIndex
                if start < buffer.count {
                    readIndex += buffer.withUnsafeBytes { raw in
                        message.take(from: UnsafeRawBufferPointer(rebasing: raw[start...]))
                    }
                }
                guard message.isComplete, buffer.count - readIndex >= 2 else {
                    pending = message
                    return nil
                }
                guard buffer[readIndex] == Self.cr, buffer[readIndex + 1] == Self.lf else {
                    throw NATSProtocolError("\(message.op) payload not followed by CRLF")
                }
                readIndex += 2
                scanIndex = readIndex
                return .message(message.finished())
            }
            guard let lineFeed = findLineFeed() else {
                // Without its LF, a line this long is over the limit whatever follows (one CR may end it).
                if buffer.count - readIndex > maximumControlLine + 1 {
                    throw NATSProtocolError("control line over \(maximumControlLine) bytes")
                }
                return nil
            }
            // The same checks, in the same order, as when the line arrives in pieces: the same bytes give the
            // same error however they were read.
            guard lineFeed - readIndex <= maximumControlLine + 1 else {
                throw NATSProtocolError("control line over \(maximumControlLine) bytes")
            }
            guard lineFeed > readIndex, buffer[lineFeed - 1] == Self.cr else {
                throw NATSProtocolError("control line ending with a bare LF")
            }
            let line = readIndex..<(lineFeed - 1)
            readIndex = lineFeed + 1
            scanIndex = readIndex
            if let op = try parseControlLine(buffer[line]) { return op }
            // A MSG or HMSG: its payload is read on the next turn.
        }
    }

    /// The index of the next LF from the read index, or nil; remembers how far it looked.
    private mutating func findLineFeed() -> Int? {
        let from = max(scanIndex, readIndex)
        let found = buffer.withUnsafeBufferPointer { raw in raw[from...].firstIndex(of: Self.lf) }
        if found == nil { scanIndex = buffer.count }
        return found
    }

    /// Reads one control line (without its CRLF). Returns the operation, or nil for MSG and HMSG, whose headers
    /// and payload are then pending.
    private mutating func parseControlLine(_ line: ArraySlice<UInt8>) throws(NATSProtocolError) -> NATSServerOp? {
        let opEnd = line.firstIndex { $0 == Self.space || $0 == Self.tab } ?? line.endIndex
        let op = line[line.startIndex..<opEnd]
        let rest = line[opEnd...]
        switch op.count {
        case 3 where Self.matches(op, "msg"):
            try readMessageLine(rest, headers: false)
            return nil
        case 4 where Self.matches(op, "hmsg"):
            try readMessageLine(rest, headers: true)
            return nil
        case 4 where Self.matches(op, "ping"):
            try Self.expectNothing(after: "PING", in: rest)
            return .ping
        case 4 where Self.matches(op, "pong"):
            try Self.expectNothing(after: "PONG", in: rest)
            return .pong
        case 3 where Self.matches(op, "+ok"):
            try Self.expectNothing(after: "+OK", in: rest)
            return .ok
        case 4 where Self.matches(op, "info"):
            let json = Self.trimmed(rest)
            guard !json.isEmpty else { throw NATSProtocolError("INFO without JSON") }
            return .info(try NATSServerInfo(json: json))
        case 4 where Self.matches(op, "-err"):
            var text = Self.trimmed(rest)
            if text.count >= 2, text.first == Self.quote, text.last == Self.quote {
                text = text.dropFirst().dropLast()
            }
            return .error(String(decoding: text, as: UTF8.self))
        default:
            let shown = String(decoding: op.prefix(16), as: UTF8.self).debugDescription
            throw NATSProtocolError("unknown operation \(shown)")
        }
    }

    /// Reads the arguments of MSG (`subject sid [reply-to] #bytes`) or HMSG (`subject sid [reply-to] #header
    /// #total`), and makes the message pending.
    private mutating func readMessageLine(_ arguments: ArraySlice<UInt8>, headers: Bool) throws(NATSProtocolError) {
        let op = headers ? "HMSG" : "MSG"
        var fields = Fields()
        guard fields.split(arguments), fields.count == (headers ? 4 : 3) || fields.count == (headers ? 5 : 4) else {
            throw NATSProtocolError("\(op) with \(fields.count > 5 ? "over 5" : String(fields.count)) arguments")
        }
        let numbers = headers ? 2 : 1
        let hasReply = fields.count == 2 + 1 + numbers
        guard let sid = Self.number(arguments[fields[1]], limit: UInt64.max) else {
            throw NATSProtocolError("\(op) whose subscription id is not a number")
        }
        guard let total = Self.number(arguments[fields[fields.count - 1]], limit: UInt64(Int.max)).map(Int.init) else {
            throw NATSProtocolError("\(op) whose size is not a decimal number that fits")
        }
        var headerCount: Int?
        if headers {
            guard let count = Self.number(arguments[fields[fields.count - 2]], limit: UInt64(Int.max)).map(Int.init)
            else { throw NATSProtocolError("HMSG whose header size is not a decimal number that fits") }
            guard count <= total else {
                throw NATSProtocolError("HMSG header bytes (\(count)) over its total bytes (\(total))")
            }
            headerCount = count
        }
        guard total <= maximumPayload else {
            throw NATSProtocolError(
                "\(op) payload of \(total) bytes over the server's maximum of \(maximumPayload)")
        }
        pending = PendingMessage(
            subject: String(decoding: arguments[fields[0]], as: UTF8.self), sid: sid,
            replyTo: hasReply ? String(decoding: arguments[fields[2]], as: UTF8.self) : nil,
            headerCount: headerCount, totalCount: total)
    }

    /// Drops the bytes already read from the buffer's front, once they are half of it (or all of it).
    private mutating func compact() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            // A buffer that grew for one large read goes back to the allocator.
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
        } else if readIndex >= buffer.count / 2 {
            buffer.removeSubrange(0..<readIndex)
        } else {
            return
        }
        scanIndex = max(0, scanIndex - readIndex)
        readIndex = 0
    }

    /// The decimal number `digits` spells, nil when it is empty, holds anything but digits, or is over `limit`.
    private static func number(_ digits: ArraySlice<UInt8>, limit: UInt64) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard (0x30...0x39).contains(byte) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow1, !overflow2, sum <= limit else { return nil }
            value = sum
        }
        return value
    }

    /// Whether `op` is `lowercase` but for ASCII case.
    private static func matches(_ op: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            op.count == expected.count
                && zip(op, expected).allSatisfy { (0x41...0x5A).contains($0) ? $0 | 0x20 == $1 : $0 == $1 }
        }
    }

    private static func expectNothing(after op: String, in rest: ArraySlice<UInt8>) throws(NATSProtocolError) {
        guard trimmed(rest).isEmpty else { throw NATSProtocolError("\(op) with arguments") }
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == space || first == tab { slice = slice.dropFirst() }
        while let last = slice.last, last == space || last == tab { slice = slice.dropLast() }
        return slice
    }

    fileprivate static let cr = UInt8(ascii: "\r")
    fileprivate static let lf = UInt8(ascii: "\n")
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let tab = UInt8(ascii: "\t")
    private static let quote = UInt8(ascii: "'")
}

/// The fields of a MSG or HMSG line, separated by runs of spaces and tabs: up to five, kept without allocating.
private struct Fields {
    private var ranges: (Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>) =
        (0..<0, 0..<0, 0..<0, 0..<0, 0..<0)
    /// How many fields there were (6 standing for more than five).
    private(set) var count = 0

    /// Splits `line`; false when it holds more than five fields.
    mutating func split(_ line: ArraySlice<UInt8>) -> Bool {
        var index = line.startIndex
        while index < line.endIndex {
            while index < line.endIndex, line[index] == NATSParser.space || line[index] == NATSParser.tab { index += 1 }
            guard index < line.endIndex else { break }
            let start = index
            while index < line.endIndex, line[index] != NATSParser.space, line[index] != NATSParser.tab { index += 1 }
            guard count < 5 else {
                count = 6
                return false
            }
            switch count {
            case 0: ranges.0 = start..<index
            case 1: ranges.1 = start..<index
            case 2: ranges.2 = start..<index
            case 3: ranges.3 = start..<index
            default: ranges.4 = start..<index
            }
            count += 1
        }
        return true
    }

    subscript(index: Int) -> Range<Int> {
        switch index {
        case 0: ranges.0
        case 1: ranges.1
        case 2: ranges.2
        case 3: ranges.3
        default: ranges.4
        }
    }
}

/// A MSG or HMSG whose control line is read: its headers and payload as they arrive.
private struct PendingMessage {
    var subject: String
    var sid: UInt64
    var replyTo: String?
    /// The size of the headers for HMSG, nil for MSG.
    var headerCount: Int?
    /// Headers and payload together.
    var totalCount: Int
    var headerBytes: [UInt8] = []
    var payload: [UInt8] = []
    private var collected = 0

    /// The most bytes reserved for a message before they come; the arrays grow as they do.
    private static let reservedAhead = 64 << 10

    init(subject: String, sid: UInt64, replyTo: String?, headerCount: Int?, totalCount: Int) {
        self.subject = subject
        self.sid = sid
        self.replyTo = replyTo
        self.headerCount = headerCount
        self.totalCount = totalCount
        // Within the server's maximum payload, which the control line was checked against, and no more than a
        // modest start until the bytes come: a claim alone reserves little.
        headerBytes.reserveCapacity(min(headerCount ?? 0, Self.reservedAhead))
        payload.reserveCapacity(min(totalCount - (headerCount ?? 0), Self.reservedAhead))
    }

    var op: String { headerCount == nil ? "MSG" : "HMSG" }

    var isComplete: Bool { collected == totalCount }

    /// Takes from the front of `bytes` what the message still lacks; returns how many bytes it took.
    mutating func take(from bytes: UnsafeRawBufferPointer) -> Int {
        var taken = 0
        let headerTotal = headerCount ?? 0
        if collected < headerTotal {
            let count = min(headerTotal - collected, bytes.count)
            headerBytes.append(contentsOf: Self.bytes(bytes, 0..<count))
            taken = count
            collected += count
        }
        if collected >= headerTotal, collected < totalCount {
            let count = min(totalCount - collected, bytes.count - taken)
            payload.append(contentsOf: Self.bytes(bytes, taken..<(taken + count)))
            taken += count
            collected += count
        }
        return taken
    }

    /// Part of `bytes`, typed as bytes so that an array appends it with one copy.
    private static func bytes(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        UnsafeRawBufferPointer(rebasing: bytes[range]).assumingMemoryBound(to: UInt8.self)
    }

    /// The message, its headers read.
    func finished() -> NATSMessage {
        var message = NATSMessage(subject: subject, sid: sid, replyTo: replyTo, headers: nil, payload: payload)
        if headerCount != nil {
            do throws(NATSProtocolError) {
                message.headers = try NATSHeaders(parsing: headerBytes[...])
            } catch {
                message.headerError = error
            }
        }
        return message
    }
}
