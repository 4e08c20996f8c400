import Foundation

/// Subjects of NATS's protocol: the checks the encoders make before writing one, and the reversible mapping of a
/// notification name onto the tail of a subject.
///
/// A name maps token by token: a dot in the name separates tokens of the subject (`cart.changed` is
/// `cart.changed`, so NATS users can subscribe with wildcards such as `prefix.cart.*`). Inside a token, ASCII
/// letters, digits, `-` and `_` stay as they are, and every other byte of the name's UTF-8 (`%` included) is
/// written `%XX`, two uppercase hexadecimal digits. An empty token (the empty name, `a..b`, a leading or trailing
/// dot) is the token `%` alone. So a tail has no empty token, no wildcard (`*`, `>`), no `$`, no whitespace, no
/// control character and no byte outside ASCII, whatever the name.
enum NATSSubject {
    /// The tail of a subject that carries the notification name `name` (see the type's summary for the mapping).
    static func tail(for name: String) -> String {
        var tail: [UInt8] = []
        tail.reserveCapacity(name.utf8.count + 2)
        var tokenIsEmpty = true
        for byte in name.utf8 {
            if byte == dot {
                if tokenIsEmpty { tail.append(percent) }
                tail.append(dot)
                tokenIsEmpty = true
                continue
            }
            append(byte, to: &tail)
            tokenIsEmpty = false
        }
        if tokenIsEmpty { tail.append(percent) }
        return String(decoding: tail, as: UTF8.self)
    }

    /// One token that stands for `text`: as a token of ``tail(for:)``, with a dot escaped (`%2E`) like any other
    /// byte outside the kept set, and `%` alone for the empty text. Not read back: what it stands for travels in
    /// the message.
    static func token(for text: String) -> String {
        var token: [UInt8] = []
        token.reserveCapacity(text.utf8.count + 1)
        for byte in text.utf8 { append(byte, to: &token) }
        if token.isEmpty { token.append(percent) }
        return String(decoding: token, as: UTF8.self)
    }

    /// Appends `byte` to a token: as it is when kept, else as `%XX`.
    private static func append(_ byte: UInt8, to token: inout [UInt8]) {
        if isKept(byte) {
            token.append(byte)
        } else {
            token.append(percent)
            token.append(hexDigits[Int(byte >> 4)])
            token.append(hexDigits[Int(byte & 0x0F)])
        }
    }

    /// The notification name that `tail` carries, or nil when `tail` is not a tail that ``tail(for:)`` makes: a
    /// byte outside the kept set, an escape of a kept byte or of a dot, lowercase hexadecimal, an empty token, a
    /// wildcard, or escapes that are not UTF-8. Another client may publish any subject; this is how the bridge
    /// tells the ones it can read.
    static func name(fromTail tail: String) -> String? {
        var name: [UInt8] = []
        name.reserveCapacity(tail.utf8.count)
        for (index, token) in tail.utf8.split(separator: dot, omittingEmptySubsequences: false).enumerated() {
            if index > 0 { name.append(dot) }
            if token.count == 1, token.first == percent { continue }
            var position = token.startIndex
            while position < token.endIndex {
                let byte = token[position]
                if isKept(byte) {
                    name.append(byte)
                    position = token.index(after: position)
                    continue
                }
                guard byte == percent, token.distance(from: position, to: token.endIndex) >= 3,
                    let high = hexValue(token[token.index(position, offsetBy: 1)]),
                    let low = hexValue(token[token.index(position, offsetBy: 2)])
                else { return nil }
                name.append(high << 4 | low)
                position = token.index(position, offsetBy: 3)
            }
        }
        // One tail per name: anything decoded from a tail written another way (an escaped letter or dot, an empty
        // token) is refused, and so are escapes that are not UTF-8.
        // Bytes that are not UTF-8 decode with replacement characters, whose tail is another.
        let decoded = String(decoding: name, as: UTF8.self)
        guard self.tail(for: decoded) == tail else { return nil }
        return decoded
    }

    /// Whether `subject` may be written in a SUB: non-empty tokens separated by dots, no whitespace or control
    /// character (the server splits a line on spaces and tabs; a CR or LF would end it), and the wildcard `>` only
    /// as the last token. `*` and `>` count as wildcards only as whole tokens, as the server counts them.
    static func isValid(_ subject: String) -> Bool {
        isWellFormed(subject, allowingWildcards: true)
    }

    /// Whether `subject` may be published to, or given as a reply-to: ``isValid(_:)`` without wildcard tokens.
    static func isValidLiteral(_ subject: String) -> Bool {
        isWellFormed(subject, allowingWildcards: false)
    }

    /// Whether `prefix` may start the subjects the bridge makes: dot-separated, non-empty tokens of ASCII letters,
    /// digits, `-` and `_` (so never a wildcard, and never `$`, the server's own subjects such as `$JS.API`).
    static func isValidPrefix(_ prefix: String) -> Bool {
        var tokenIsEmpty = true
        for byte in prefix.utf8 {
            if byte == dot {
                if tokenIsEmpty { return false }
                tokenIsEmpty = true
            } else if isKept(byte) {
                tokenIsEmpty = false
            } else {
                return false
            }
        }
        return !tokenIsEmpty
    }

    /// Whether `text` (a queue group) is a single field of a control line: non-empty, without whitespace or
    /// control characters.
    static func isValidField(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        var nonASCII = false
        for byte in text.utf8 {
            if byte <= space || byte == 0x7F { return false }
            if byte >= 0x80 { nonASCII = true }
        }
        return !nonASCII || text.unicodeScalars.allSatisfy(isPrintable)
    }

    private static func isWellFormed(_ subject: String, allowingWildcards: Bool) -> Bool {
        var tokenLength = 0
        var tokenByte: UInt8 = 0
        var nonASCII = false
        for byte in subject.utf8 {
            if byte == dot {
                guard tokenLength > 0 else { return false }
                // A wildcard token before a dot: `*` where wildcards may be, `>` never (it must be the last).
                if tokenLength == 1, tokenByte == star || tokenByte == greater {
                    guard allowingWildcards, tokenByte == star else { return false }
                }
                tokenLength = 0
                continue
            }
            if byte <= space || byte == 0x7F { return false }
            if byte >= 0x80 { nonASCII = true }
            tokenLength += 1
            tokenByte = byte
        }
        guard tokenLength > 0 else { return false }
        if tokenLength == 1, tokenByte == star || tokenByte == greater, !allowingWildcards { return false }
        return !nonASCII || subject.unicodeScalars.allSatisfy(isPrintable)
    }

    /// Whether a scalar outside ASCII is neither whitespace (U+00A0, U+2028 …) nor a control character (C1).
    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        !(0x80...0x9F).contains(scalar.value) && !scalar.properties.isWhitespace
    }

    /// The bytes a token of a tail keeps as they are: ASCII letters, digits, `-` and `_`.
    static func isKept(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let dot = UInt8(ascii: ".")
    private static let percent = UInt8(ascii: "%")
    private static let star = UInt8(ascii: "*")
    private static let greater = UInt8(ascii: ">")
    private static let space = UInt8(ascii: " ")
}
