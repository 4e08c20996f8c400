import Wormhole

/// Reads the JSON a user types (`--user-info`, `value --set`) into a ``JSONValue``, or says what is wrong in
/// words a user can act on, at which line and column.
///
/// Strict JSON (RFC 8259), any value at the top. An integer keeps every digit across the whole `Int64` and
/// `UInt64` ranges; one past them, a real too large for a `Double` or so small it would be 0, a key given twice,
/// and nesting deeper than ``GroupNotificationCenter/maximumNestingDepth`` are errors, never a changed value. Not
/// errors: a real that needs rounding to the nearest `Double` (`0.1`), and `-0`, which is the integer 0.
struct JSONReader {
    /// The text's UTF-8, borrowed for the length of ``parse(_:option:maximumDepth:)``: reading through a buffer
    /// rather than an array spares a retain and a release per byte in a debug build (`swift run`).
    private let bytes: UnsafeBufferPointer<UInt8>
    private let option: String
    private let maximumDepth: Int
    private var position = 0

    /// The value `text` holds.
    /// - Parameters:
    ///   - option: The option the text came from, which each error names (`--set`).
    ///   - maximumDepth: The deepest nesting accepted: a group value is one level inside its userInfo.
    /// - Throws: A ``UsageError`` naming the option, the line and column and what to write instead.
    static func parse(
        _ text: String, option: String, maximumDepth: Int = GroupNotificationCenter.maximumNestingDepth
    ) throws(UsageError) -> JSONValue {
        var outcome: Result<JSONValue, UsageError> = .failure(UsageError("\(option) is empty: give it a JSON value"))
        let utf8: [UInt8] = Array(text.utf8)
        utf8.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer, option: option, maximumDepth: maximumDepth)
            do throws(UsageError) {
                outcome = .success(try reader.document())
            } catch {
                outcome = .failure(error)
            }
        }
        switch outcome {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    /// The one value the whole text holds.
    private mutating func document() throws(UsageError) -> JSONValue {
        // A byte order mark, which some editors put first: not JSON text (RFC 8259 section 8.1), and invisible.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw error("the text starts with a byte order mark (U+FEFF): save it as UTF-8 without one")
        }
        skipSpace()
        guard position < bytes.count else { throw UsageError("\(option) is empty: give it a JSON value") }
        let value = try value(depth: 1)
        skipSpace()
        guard position == bytes.count else { throw error("there is more after the JSON value (quote the whole text as one string?)") }
        return value
    }

    private mutating func value(depth: Int) throws(UsageError) -> JSONValue {
        guard let byte = peek() else { throw error("a value is missing at the end") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth <= maximumDepth else { throw error("nests deeper than \(maximumDepth) arrays and objects, the most \(option) takes") }
            return byte == UInt8(ascii: "{") ? try object(depth: depth) : try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        case UInt8(ascii: "'"): throw error("strings take double quotes: \"…\", not '…'")
        case UInt8(ascii: "+"): throw error("a number starts with a digit or -, not +")
        case UInt8(ascii: "."): throw error("a number starts with a digit: write 0.5, not .5")
        default:
            let word = self.word()
            switch word {
            case "true": position += 4; return .bool(true)
            case "false": position += 5; return .bool(false)
            case "null": position += 4; return .null
            case "NaN", "Infinity", "-Infinity", "nan", "inf":
                throw error("JSON has no \(word); a group value or userInfo takes a finite number")
            case "": throw error("'\(Self.character(at: position, in: bytes))' is not where a value can start")
            // Alone, the quotes must survive the shell too.
            default: throw error("a bare word needs quotes: write \"\(word)\"" + (depth == 1 ? " (in a shell: '\"\(word)\"')" : ""))
            }
        }
    }

    private mutating func object(depth: Int) throws(UsageError) -> JSONValue {
        position += 1
        var members: [String: JSONValue] = [:]
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipSpace()
            let start = position
            guard peek() == UInt8(ascii: "\"") else {
                if peek() == UInt8(ascii: "}") { throw error("a comma before } has no member after it") }
                let word = self.word()
                throw error(word.isEmpty ? "a key (a string in double quotes) is missing" : "a key needs quotes: write \"\(word)\"")
            }
            let key = try string()
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw error("a ':' is missing after the key \"\(Self.shown(key))\"") }
            position += 1
            skipSpace()
            let item = try value(depth: depth + 1)
            guard members.updateValue(item, forKey: key) == nil else {
                position = start
                throw error("the key \"\(Self.shown(key))\" is given twice")
            }
            skipSpace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            case nil: throw error("the object is not closed: a '}' is missing")
            default: throw error("a ',' or '}' is missing after the value of \"\(Self.shown(key))\"")
            }
        }
    }

    private mutating func array(depth: Int) throws(UsageError) -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipSpace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            skipSpace()
            switch peek() {
            case UInt8(ascii: ","): throw error("a value is missing before ','")
            case UInt8(ascii: "]"): throw error("a comma before ] has no value after it")
            default: break
            }
            items.append(try value(depth: depth + 1))
            skipSpace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(items)
            case nil: throw error("the array is not closed: a ']' is missing")
            default: throw error("a ',' or ']' is missing after an array item")
            }
        }
    }

    private mutating func string() throws(UsageError) -> String {
        let start = position
        position += 1
        var result = ""
        var run = position
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: "\""):
                result += String(decoding: bytes[run..<position], as: UTF8.self)
                position += 1
                return result
            case UInt8(ascii: "\\"):
                result += String(decoding: bytes[run..<position], as: UTF8.self)
                position += 1
                result.unicodeScalars.append(try escape())
                run = position
            case 0..<0x20:
                throw error("a string holds a control character: write it as \\n, \\t or \\u00XX")
            default: position += 1
            }
        }
        position = start
        throw error("the string is not closed: a '\"' is missing")
    }

    /// The character an escape after `\` stands for.
    private mutating func escape() throws(UsageError) -> Unicode.Scalar {
        guard let byte = peek() else { throw error("the string ends in the middle of an escape") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hexUnit()
            if (0xD800..<0xDC00).contains(unit) {
                guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                    throw error("\\u\(String(unit, radix: 16)) is half of a surrogate pair; its other half is missing")
                }
                position += 2
                let low = try hexUnit()
                guard (0xDC00..<0xE000).contains(low), let scalar = Unicode.Scalar(0x10000 + (unit - 0xD800) << 10 + (low - 0xDC00)) else {
                    throw error("\\u\(String(unit, radix: 16)) is not followed by the second half of a surrogate pair")
                }
                return scalar
            }
            guard let scalar = Unicode.Scalar(unit) else { throw error("\\u\(String(unit, radix: 16)) is half of a surrogate pair alone") }
            return scalar
        default:
            position -= 1
            throw error("\\\(Self.character(at: position, in: bytes)) is not an escape: use \\\\ for a backslash")
        }
    }

    private mutating func hexUnit() throws(UsageError) -> UInt32 {
        // Digit by digit: UInt32(_:radix:) would also take a sign ("\\u+041").
        guard position + 4 <= bytes.count else { throw error("\\u takes four hexadecimal digits") }
        var unit: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            guard let digit = Self.hexDigit(byte) else { throw error("\\u takes four hexadecimal digits") }
            unit = unit << 4 | digit
        }
        position += 4
        return unit
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// A number: an integer when it has no fraction and no exponent, else a real.
    private mutating func number() throws(UsageError) -> JSONValue {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), Self.isDigit(first) else {
            throw error(word() == "Infinity" ? "JSON has no -Infinity; a group value or userInfo takes a finite number" : "a '-' must be followed by digits")
        }
        let integerDigits = digits()
        if first == UInt8(ascii: "0"), integerDigits > 1 {
            position = start
            throw error("a number cannot start with 0 (write 10, or \"010\" as a string)")
        }
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            position += 1
            isInteger = false
            guard digits() > 0 else { throw error("a '.' must be followed by digits: write 1.0, not 1.") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            isInteger = false
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw error("an exponent must have digits: write 1e5") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger {
            if let value = Int64(text) { return .integer(value) }
            if let value = UInt64(text) { return .unsigned(value) }
            position = start
            throw error("\(Self.shown(text)) is past the range of 64-bit integers (\(Int64.min) to \(UInt64.max)); write it as a string, or as a real (1.5e20)")
        }
        guard let value = Double(text), value.isFinite else {
            position = start
            throw error("\(Self.shown(text)) is too large for a 64-bit real (the largest is \(Double.greatestFiniteMagnitude))")
        }
        // Rounding to the nearest Double is what a real is; rounding a number that is not 0 to 0 is not.
        if value == 0, text.prefix(while: { $0 != "e" && $0 != "E" }).contains(where: { ("1"..."9").contains($0) }) {
            position = start
            throw error("\(Self.shown(text)) is too small for a 64-bit real: it would be 0 (the smallest is \(Double.leastNonzeroMagnitude))")
        }
        return .real(value)
    }

    /// Skips the digits at the position; how many.
    private mutating func digits() -> Int {
        let start = position
        while position < bytes.count, Self.isDigit(bytes[position]) { position += 1 }
        return position - start
    }

    /// Arithmetic rather than a range: a debug build (`swift run`) makes a range check a call per byte.
    private static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    /// The run of letters, digits, `_`, `.` and `-` at the position (a word a user meant as a string), without
    /// moving past it; as ``shown(_:)`` shows it.
    private func word() -> String {
        var end = position
        while end < bytes.count, bytes[end] >= 0x80 || Self.isWordByte(bytes[end]) { end += 1 }
        return Self.shown(String(decoding: bytes[position..<end], as: UTF8.self))
    }

    /// Text of the input as an error quotes it: its first 40 characters and an ellipsis, so that the error stays
    /// one line a person can read.
    private static func shown(_ text: String) -> String {
        text.count > 40 ? text.prefix(40) + "…" : text
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"): true
        default: false
        }
    }

    private static func character(at position: Int, in bytes: UnsafeBufferPointer<UInt8>) -> String {
        var end = position + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        return String(decoding: bytes[position..<min(end, bytes.count)], as: UTF8.self)
    }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipSpace() {
        while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x0A || bytes[position] == 0x0D || bytes[position] == 0x09 {
            position += 1
        }
    }

    /// An error at the position, told as a line and a column (in characters).
    private func error(_ reason: String) -> UsageError {
        let before = bytes[..<min(position, bytes.count)]
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        let column = String(decoding: bytes[lineStart..<min(position, bytes.count)], as: UTF8.self).count + 1
        return UsageError("\(option) is not valid JSON at line \(line), column \(column): \(reason)")
    }
}
