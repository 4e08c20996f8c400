import Foundation
import Wormhole

/// Converts between JSON and userInfo values for the command line.
enum JSONValue {
    /// A userInfo dictionary from a JSON object; JSON null is `NSNull`.
    static func userInfo(from text: String) throws -> [AnyHashable: Any] {
        guard let object = try parse(text, option: "--user-info") as? [String: Any] else {
            throw UsageError("--user-info must be a JSON object")
        }
        return object
    }

    /// The text an option names: `@FILE` reads a regular file, `-` standard input, anything else is the text
    /// itself. Neither is read past what a userInfo may hold (as JSON, four times its limit): `/dev/zero` or an
    /// endless pipe is an error, not a process that fills memory; a FIFO is refused, not waited on.
    static func text(of argument: String) throws -> String {
        let limit = 4 * GroupNotificationCenter.maximumPayloadSize
        if argument == "-" {
            let data = FileHandle.standardInput.readData(ofLength: limit + 1)
            guard data.count <= limit else { throw UsageError("standard input holds more than \(limit) bytes") }
            return String(decoding: data, as: UTF8.self)
        }
        guard argument.hasPrefix("@") else { return argument }
        let path = String(argument.dropFirst())
        let fd = open(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { throw UsageError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw UsageError("\(path) is not a regular file") }
        guard Int(status.st_size) <= limit else { throw UsageError("\(path) holds more than \(limit) bytes") }
        let data = FileHandle(fileDescriptor: fd, closeOnDealloc: false).readData(ofLength: limit + 1)
        guard data.count <= limit else { throw UsageError("\(path) holds more than \(limit) bytes") }
        return String(decoding: data, as: UTF8.self)
    }

    /// `text` parsed as JSON; a syntax error names its line and column.
    static func parse(_ text: String, option: String, fragments: Bool = false) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(text.utf8), options: fragments ? [.fragmentsAllowed] : [])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            // Foundation says where in characters ("around character 21"): told as a line and a column.
            if let range = detail.range(of: #"character \d+"#, options: .regularExpression),
                let offset = Int(detail[range].dropFirst("character ".count))
            {
                let before = text.utf8.prefix(offset)
                let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
                let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { before.distance(from: before.startIndex, to: $0) + 1 } ?? 0) + 1
                throw UsageError("\(option) is not valid JSON at line \(line), column \(column): \(detail)")
            }
            throw UsageError("\(option) is not valid JSON: \(detail)")
        }
    }

    /// One JSON line for a received notification: name, object, userInfo (Data as base64, Date as ISO 8601, a URL
    /// or UUID as its string, a set as an array, NSNull as null).
    static func line(for note: Notification) -> String {
        var object: [String: Any] = ["name": note.name.rawValue]
        object["object"] = (note.object as? String) ?? NSNull()
        object["userInfo"] = note.userInfo.map { jsonCompatible($0) } ?? NSNull()
        return string(object)
    }

    static func string(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func jsonCompatible(_ value: Any) -> Any {
        switch value {
        case let string as String: return string
        case let number as NSNumber: return number
        case let data as Data: return data.base64EncodedString()
        case let date as Date: return AnyValue.dateText(date)
        case let url as URL: return url.absoluteString
        case let uuid as UUID: return uuid.uuidString
        case let set as Set<AnyHashable>: return set.map { jsonCompatible($0.base) }
        case let array as [Any]: return array.map(jsonCompatible)
        case let dictionary as [AnyHashable: Any]:
            var result: [String: Any] = [:]
            for (key, item) in dictionary { result[String(describing: key.base)] = jsonCompatible(item) }
            return result
        case is NSNull: return NSNull()
        default: return String(describing: value)
        }
    }
}
