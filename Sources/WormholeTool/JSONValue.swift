import Foundation

/// Converts between JSON and userInfo values for the command line.
enum JSONValue {
    /// A userInfo dictionary from a JSON object; JSON null is `NSNull`.
    static func userInfo(from text: String) throws -> [AnyHashable: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            throw UsageError("--user-info is not valid JSON: \(error.localizedDescription)")
        }
        guard let object = parsed as? [String: Any] else { throw UsageError("--user-info must be a JSON object") }
        return object
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
