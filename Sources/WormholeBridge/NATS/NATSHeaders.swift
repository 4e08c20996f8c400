import Foundation

/// The headers of a NATS message (HMSG from the server, HPUB from us): an optional status and ordered fields.
///
/// On the wire: `NATS/1.0[ status[ description]]\r\n`, then a `Name: value\r\n` line per field, then an empty
/// line. The status is how the server answers on its own: `NATS/1.0 503` when a request found no responders,
/// `408 Request Timeout` and `404 No Messages` from a pull consumer. Names compare without regard to ASCII case,
/// and keep the case they were given; a name may appear more than once.
package struct NATSHeaders: Sendable, Equatable {
    /// The status of the first line (503, 408 …), nil for an ordinary message.
    var status: Int?
    /// The words after the status ("Request Timeout"), nil when there are none.
    var statusDescription: String?
    /// The fields in the order they were written or received.
    var fields: [(name: String, value: String)]

    /// Headers with no status and no field.
    package init() {
        fields = []
    }

    /// The value of the first field named `name` (ASCII case aside), nil when there is none.
    subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// The values of every field named `name` (ASCII case aside), in order.
    func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Sets the field `name` to `value` alone: the first field of that name takes the value, later ones go, and a
    /// new field is added at the end when there was none.
    /// - Throws: when the name is empty or holds whitespace, a control character, `:` or a byte outside ASCII, or
    ///   when the value holds a CR or LF: such a field would forge lines of its own.
    package mutating func set(_ name: String, _ value: String) throws(NATSProtocolError) {
        try Self.check(name: name, value: value)
        guard let first = fields.firstIndex(where: { Self.sameName($0.name, name) }) else {
            fields.append((name, value))
            return
        }
        fields[first].value = value
        var index = fields.index(after: first)
        while index < fields.endIndex {
            if Self.sameName(fields[index].name, name) { fields.remove(at: index) } else { index += 1 }
        }
    }

    /// Adds a field at the end, beside any of the same name.
    /// - Throws: as ``set(_:_:)``.
    mutating func append(_ name: String, _ value: String) throws(NATSProtocolError) {
        try Self.check(name: name, value: value)
        fields.append((name, value))
    }

    /// Removes every field named `name` (ASCII case aside).
    mutating func remove(_ name: String) {
        fields.removeAll { Self.sameName($0.name, name) }
    }

    /// Checks that every part can be written without forging a line: what HPUB's encoder checks, since `fields`
    /// and the status can be assigned directly.
    /// - Throws: for a field ``set(_:_:)`` would refuse, a status outside 100...999, a description holding a CR or
    ///   LF, or a description without a status.
    func validate() throws(NATSProtocolError) {
        if let status, !(100...999).contains(status) {
            throw NATSProtocolError("header status \(status) is not three digits from 100 to 999")
        }
        if let statusDescription {
            guard status != nil else { throw NATSProtocolError("header status description without a status") }
            guard !statusDescription.utf8.contains(where: { $0 == Self.cr || $0 == Self.lf }) else {
                throw NATSProtocolError("header status description holds a CR or LF")
            }
        }
        for field in fields { try Self.check(name: field.name, value: field.value) }
    }

    /// The headers as NATS writes them, ending with the empty line.
    ///
    /// Whatever ``validate()`` would refuse is left out (a field, the status or its description), so these bytes
    /// never hold a line that a value forged; HPUB's encoder validates first and throws instead.
    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        append(into: &bytes)
        return bytes
    }

    /// Appends ``encoded()`` to `buffer`.
    func append(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: Self.version)
        if let status, (100...999).contains(status) {
            buffer.append(Self.space)
            buffer.append(contentsOf: String(status).utf8)
            if let statusDescription, !statusDescription.isEmpty,
                !statusDescription.utf8.contains(where: { $0 == Self.cr || $0 == Self.lf })
            {
                buffer.append(Self.space)
                buffer.append(contentsOf: statusDescription.utf8)
            }
        }
        buffer.append(Self.cr)
        buffer.append(Self.lf)
        for field in fields where (try? Self.check(name: field.name, value: field.value)) != nil {
            buffer.append(contentsOf: field.name.utf8)
            buffer.append(Self.colon)
            buffer.append(Self.space)
            buffer.append(contentsOf: field.value.utf8)
            buffer.append(Self.cr)
            buffer.append(Self.lf)
        }
        buffer.append(Self.cr)
        buffer.append(Self.lf)
    }

    /// Reads a header block as HMSG carries it: `NATS/1.0`, an optional three-digit status and description on the
    /// same line, `Name: value` lines (the value without the spaces and tabs around it), each ending in CRLF, then
    /// an empty line that ends `bytes`.
    /// - Throws: when the first line is not `NATS/1.0…`, a status is not 100...999, a line has no `:`, an empty
    ///   name or one holding whitespace or control characters, a line holds a bare CR or LF, the empty line is
    ///   missing, or bytes follow it. Bytes that are not UTF-8 in a value or description are not an error: they
    ///   read as U+FFFD, since the server passes on whatever another client wrote.
    init(parsing bytes: ArraySlice<UInt8>) throws(NATSProtocolError) {
        self.init()
        guard bytes.starts(with: Self.version) else { throw NATSProtocolError("headers not starting with NATS/1.0") }
        var lines = HeaderLines(bytes)
        guard let first = try lines.next() else { throw NATSProtocolError("headers without their closing empty line") }
        let rest = first.dropFirst(Self.version.count)
        if let separator = rest.first {
            guard separator == Self.space || separator == Self.tab else {
                throw NATSProtocolError("headers not starting with NATS/1.0")
            }
            let statusText = Self.trimmed(rest)
            if !statusText.isEmpty {
                let digits = statusText.prefix(3)
                let afterDigits = statusText.dropFirst(3)
                guard digits.count == 3, digits.allSatisfy({ (0x30...0x39).contains($0) }), digits.first != 0x30,
                    afterDigits.first.map({ $0 == Self.space || $0 == Self.tab }) ?? true
                else { throw NATSProtocolError("header status is not three digits from 100 to 999") }
                status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                let description = Self.trimmed(afterDigits)
                statusDescription = description.isEmpty ? nil : String(decoding: description, as: UTF8.self)
            }
        }
        while true {
            guard let line = try lines.next() else {
                throw NATSProtocolError("headers without their closing empty line")
            }
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: Self.colon) else {
                throw NATSProtocolError("header line without ':'")
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw NATSProtocolError("header name empty or holding whitespace or control characters")
            }
            let value = Self.trimmed(line[line.index(after: colon)...])
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        guard lines.isAtEnd else { throw NATSProtocolError("headers with bytes after their closing empty line") }
    }

    package static func == (lhs: NATSHeaders, rhs: NATSHeaders) -> Bool {
        lhs.status == rhs.status && lhs.statusDescription == rhs.statusDescription
            && lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// Refuses a field that would forge lines when written.
    private static func check(name: String, value: String) throws(NATSProtocolError) {
        guard !name.isEmpty, name.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != colon }) else {
            throw NATSProtocolError("header name \(name.debugDescription) is empty or holds ':', whitespace, "
                + "a control character or a byte outside ASCII")
        }
        guard !value.utf8.contains(where: { $0 == cr || $0 == lf }) else {
            throw NATSProtocolError("header \(name) has a value holding a CR or LF")
        }
    }

    /// Whether two names are the same but for ASCII case.
    private static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lowercased($0) == lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == space || first == tab { slice = slice.dropFirst() }
        while let last = slice.last, last == space || last == tab { slice = slice.dropLast() }
        return slice
    }

    private static let version = Array("NATS/1.0".utf8)
    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let colon = UInt8(ascii: ":")
}

/// The CRLF-terminated lines of a header block, each without its CRLF.
private struct HeaderLines {
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var isAtEnd: Bool { position == bytes.endIndex }

    /// The next line; nil when no CRLF ends one.
    /// - Throws: for a CR not followed by LF, or an LF not preceded by CR.
    mutating func next() throws(NATSProtocolError) -> ArraySlice<UInt8>? {
        var index = position
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "\r"):
                guard bytes.index(after: index) < bytes.endIndex, bytes[bytes.index(after: index)] == UInt8(ascii: "\n")
                else {
                    if bytes.index(after: index) == bytes.endIndex { return nil }
                    throw NATSProtocolError("header line holding a bare CR")
                }
                let line = bytes[position..<index]
                position = index + 2
                return line
            case UInt8(ascii: "\n"):
                throw NATSProtocolError("header line holding a bare LF")
            default:
                index += 1
            }
        }
        return nil
    }
}
