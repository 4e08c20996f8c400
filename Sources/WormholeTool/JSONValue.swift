import Foundation

/// Converts between JSON and userInfo values for the command line.
enum JSONValue {
    /// A userInfo dictionary from a JSON object; JSON null has no property-list counterpart and is refused.
    static func userInfo(from text: String) throws -> [AnyHashable: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            throw UsageError("--user-info is not valid JSON: \(error.localizedDescription)")
        }
        guard let object = parsed as? [String: Any] else { throw UsageError("--user-info must be a JSON object") }
        try rejectNull(object, path: "userInfo")
        return object
    }

    private static func rejectNull(_ value: Any, path: String) throws {
        switch value {
        case is NSNull: throw UsageError("--user-info has null at \(path); property lists have no null")
        case let array as [Any]:
            for (index, item) in array.enumerated() { try rejectNull(item, path: "\(path)[\(index)]") }
        case let dictionary as [String: Any]:
            for (key, item) in dictionary { try rejectNull(item, path: "\(path).\(key)") }
        default: break
        }
    }

    /// One JSON line for a received notification: name, object, userInfo (Data as base64, Date as ISO 8601).
    static func line(for note: Notification) -> String {
        var object: [String: Any] = ["name": note.name.rawValue]
        object["object"] = (note.object as? String) ?? NSNull()
        object["userInfo"] = note.userInfo.map { jsonCompatible($0) } ?? NSNull()
        return string(object)
    }

    static func string(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func jsonCompatible(_ value: Any) -> Any {
        switch value {
        case let string as String: return string
        case let number as NSNumber: return number
        case let data as Data: return data.base64EncodedString()
        case let date as Date: return ISO8601DateFormatter().string(from: date)
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
