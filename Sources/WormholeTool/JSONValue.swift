import Foundation
import Wormhole

/// A JSON value as the tool reads and prints it: integers exact across the whole `Int64` and `UInt64` ranges, and
/// reals kept apart from integers.
///
/// The tool reads JSON with ``JSONReader`` and writes it with ``text`` itself, never through `JSONSerialization`:
/// that rounds or wraps integers past `Int64` differently on each platform, prints a real `1.0` as `1`, and on
/// Apple platforms raises an Objective-C exception (a crash) for a non-finite real.
///
/// How values print, everywhere the tool prints JSON (`listen`, `retained`, `value`, `status --json`): an
/// integer as its digits; a real always with a fraction or an exponent (`1.0`, `0.25`, `1e+16`); NaN and the
/// infinities, which JSON has no number for, as the strings `"NaN"`, `"Infinity"` and `"-Infinity"`; data as
/// base64 and a date as ISO 8601 (see ``init(date:)``); keys sorted; `/` not escaped.
indirect enum JSONValue: Equatable {
    case null
    case bool(Bool)
    /// An integer that fits `Int64`.
    case integer(Int64)
    /// An integer past `Int64.max`.
    case unsigned(UInt64)
    case real(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The value as one line of JSON, as described at the top.
    var text: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .unsigned(let value): output += String(value)
        case .real(let value): output += Self.text(of: value)
        case .string(let value): Self.write(string: value, to: &output)
        case .array(let items):
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                item.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output += "," }
                Self.write(string: key, to: &output)
                output += ":"
                members[key]?.write(to: &output)
            }
            output += "}"
        }
    }

    /// A real as printed: Swift's shortest text that reads back as the same `Double`, which always has a fraction
    /// or an exponent; a non-finite one as a string.
    static func text(of real: Double) -> String {
        if real.isNaN { return #""NaN""# }
        if real.isInfinite { return real < 0 ? #""-Infinity""# : #""Infinity""# }
        return "\(real)"
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`; everything else as is.
    private static func write(string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    // MARK: Between JSON and Foundation values

    /// The value a received notification's userInfo holds, as JSON: Data as base64, a Date as ISO 8601, a URL or
    /// UUID as its string, a set as an array, NSNull as null, a key that is not a string as its description, a
    /// number as the type it was sent as (a `Bool`, an integer, a real); anything else as its description. A
    /// dictionary whose keys would collide as text (`1` and `"1"`) is an array of `[key, value]` pairs instead.
    init(received value: Any) {
        switch value {
        case let string as String: self = .string(string)
        // Before NSNumber: a cast of Data to a class bridges it, copying every byte.
        case let data as Data: self = .string(data.base64EncodedString())
        case let date as Date: self = JSONValue(date: date)
        case let url as URL: self = .string(url.absoluteString)
        case let uuid as UUID: self = .string(uuid.uuidString)
        case let number as NSNumber: self = JSONValue(number: number)
        case is NSNull: self = .null
        case let set as Set<AnyHashable>: self = .array(set.map { JSONValue(received: $0.base) })
        case let array as [Any]: self = .array(array.map(JSONValue.init(received:)))
        case let dictionary as [AnyHashable: Any]:
            var members: [String: JSONValue] = [:]
            for (key, item) in dictionary {
                let text = (key.base as? String) ?? String(describing: key.base)
                // Two keys that print alike (the number 1 and the string "1"): one would be lost in an object.
                guard members.updateValue(JSONValue(received: item), forKey: text) == nil else {
                    self = JSONValue(pairsOf: dictionary)
                    return
                }
            }
            self = .object(members)
        default: self = .string(String(describing: value))
        }
    }

    /// A dictionary two of whose keys print as the same text, as an array of `[key, value]` pairs, each key as
    /// the JSON value it is (`1`, `"1"`), ordered by the key's JSON text: every entry shown, in the same order on
    /// every run.
    private init(pairsOf dictionary: [AnyHashable: Any]) {
        let pairs = dictionary.map { (key: JSONValue(received: $0.key.base), value: JSONValue(received: $0.value)) }
        self = .array(pairs.map { (text: $0.key.text, pair: JSONValue.array([$0.key, $0.value])) }
            .sorted { $0.text < $1.text }.map(\.pair))
    }

    /// A date as ISO 8601 in UTC, as ``ISO8601/text(_:)`` prints it (the fraction of a second only when not zero);
    /// one that form cannot show (before the year 1, from 10000 on, or not finite) as its seconds since
    /// 2001-01-01, a real.
    init(date: Date) {
        self = ISO8601.text(date).map(JSONValue.string) ?? .real(date.timeIntervalSinceReferenceDate)
    }

    /// A number as the type it holds. NSNumber's type letters: `c` is a `Bool` (JSON's true and false, and
    /// Foundation's), `d` and `f` reals, `Q` an unsigned 64-bit integer; the rest are integers that fit `Int64`.
    init(number: NSNumber) {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"): self = .bool(number.boolValue)
        // A Float prints as itself (1.1), not as the Double it widens to (1.100000023841858).
        case UInt8(ascii: "f"): self = .real(Double("\(number.floatValue)") ?? number.doubleValue)
        case UInt8(ascii: "d"): self = .real(number.doubleValue)
        case UInt8(ascii: "Q") where number.uint64Value > UInt64(Int64.max): self = .unsigned(number.uint64Value)
        default:
            let value = number.int64Value
            // One past Int64.max that reports another letter (a 128-bit CFNumber read from a property list) is
            // told by its digits, which have no sign.
            if value < 0, !number.stringValue.hasPrefix("-"), let unsigned = UInt64(number.stringValue) {
                self = .unsigned(unsigned)
            } else {
                self = .integer(value)
            }
        }
    }

    /// The value as a userInfo value: NSNull for null, `Int64`, `UInt64`, `Double` and `Bool` as themselves.
    var foundation: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .integer(let value): return value
        case .unsigned(let value): return value
        case .real(let value): return value
        case .string(let value): return value
        case .array(let items): return items.map(\.foundation)
        case .object(let members): return members.mapValues(\.foundation)
        }
    }

    /// One JSON line for a received notification: its name, its object (null when it has none) and its userInfo
    /// (null when it has none), each value as ``init(received:)`` shows it.
    static func line(for note: Notification) -> String {
        JSONValue.object([
            "name": .string(note.name.rawValue),
            "object": (note.object as? String).map(JSONValue.string) ?? .null,
            "userInfo": note.userInfo.map { JSONValue(received: $0) } ?? .null,
        ]).text
    }

    /// A userInfo dictionary from JSON text: it must be an object; null in it is `NSNull`.
    static func userInfo(from text: String) throws(UsageError) -> [AnyHashable: Any] {
        let value = try JSONReader.parse(text, option: "--user-info")
        guard case .object(let members) = value else {
            throw UsageError("--user-info must be a JSON object such as '{\"key\": 1}', not \(value.kind)")
        }
        return members.mapValues(\.foundation)
    }

    /// What kind of value this is, in words: `a number`, `a string`…
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "true or false"
        case .integer, .unsigned, .real: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The text an option names: `@FILE` reads a regular file, `-` standard input, anything else is the text
    /// itself. Neither is read past what a userInfo may hold (as JSON, four times its limit): `/dev/zero` or an
    /// endless pipe is an error, not a process that fills memory; a FIFO is refused, not waited on; standard
    /// input closed or a folder is an error, not a crash.
    static func text(of argument: String) throws -> String {
        let limit = 4 * GroupNotificationCenter.maximumPayloadSize
        if argument == "-" {
            let data = try read(FileHandle.standardInput, upTo: limit + 1, from: "standard input")
            guard data.count <= limit else { throw UsageError("standard input holds more than \(limit) bytes") }
            return try utf8Text(data, from: "standard input")
        }
        guard argument.hasPrefix("@") else { return argument }
        let path = String(argument.dropFirst())
        let fd = open(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { throw UsageError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw UsageError("\(path) is not a regular file") }
        guard Int(status.st_size) <= limit else { throw UsageError("\(path) holds more than \(limit) bytes") }
        let data = try read(FileHandle(fileDescriptor: fd, closeOnDealloc: false), upTo: limit + 1, from: path)
        guard data.count <= limit else { throw UsageError("\(path) holds more than \(limit) bytes") }
        return try utf8Text(data, from: path)
    }

    /// Up to `count` bytes of `handle`, to its end. `readData(ofLength:)` traps on a read that fails (standard
    /// input closed, or a folder): here that is an error naming `source`.
    private static func read(_ handle: FileHandle, upTo count: Int, from source: String) throws(UsageError) -> Data {
        do {
            return try handle.read(upToCount: count) ?? Data()
        } catch {
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let reason = underlying.map { $0.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32($0.code))) : $0.localizedDescription }
            throw UsageError("cannot read \(source): \(reason ?? "\(error)")")
        }
    }

    /// `bytes` as text, when they are UTF-8, as JSON text must be: a byte that is not (a file saved as Latin-1 or
    /// UTF-16) is an error naming its offset, never a character replaced by U+FFFD in what is posted.
    /// - Parameter source: What the bytes came from, as the error names it (`standard input`, a path, `argument 3`).
    static func utf8Text(_ bytes: some Collection<UInt8>, from source: String) throws(UsageError) -> String {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error:
                throw UsageError("\(source) is not UTF-8 text: byte \(offset) is not part of a UTF-8 character")
            }
        }
    }
}
