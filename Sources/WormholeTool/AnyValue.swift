import Foundation
import Wormhole

/// Any value a property list holds, as a `Codable` type: what `wormhole value` reads and writes, whatever type
/// the processes that share the value use.
indirect enum AnyValue: Codable, Sendable {
    case bool(Bool), integer(Int), double(Double), string(String), date(Date), data(Data)
    case array([AnyValue]), dictionary([String: AnyValue])

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        // A group value's decoder carries the stored property list, which alone tells a real `1.0` from `1`.
        if decoder.codingPath.count == 1, let stored = decoder.userInfo[.storedPropertyList] as? StoredPropertyList {
            self = try AnyValue(propertyList: stored.value)
        } else if let keyed = try? decoder.container(keyedBy: Key.self) {
            var dictionary: [String: AnyValue] = [:]
            for key in keyed.allKeys { dictionary[key.stringValue] = try keyed.decode(AnyValue.self, forKey: key) }
            self = .dictionary(dictionary)
        } else if var unkeyed = try? decoder.unkeyedContainer() {
            var array: [AnyValue] = []
            while !unkeyed.isAtEnd { array.append(try unkeyed.decode(AnyValue.self)) }
            self = .array(array)
        } else {
            let single = try decoder.singleValueContainer()
            if let value = try? single.decode(Bool.self) { self = .bool(value) }
            else if let value = try? single.decode(Int.self) { self = .integer(value) }
            else if let value = try? single.decode(Double.self) { self = .double(value) }
            else if let value = try? single.decode(Date.self) { self = .date(value) }
            else if let value = try? single.decode(Data.self) { self = .data(value) }
            else { self = .string(try single.decode(String.self)) }
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .array(let array):
            var container = encoder.unkeyedContainer()
            for item in array { try container.encode(item) }
        case .dictionary(let dictionary):
            var container = encoder.container(keyedBy: Key.self)
            for (key, item) in dictionary { try container.encode(item, forKey: Key(stringValue: key)) }
        case .bool(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .integer(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .double(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .string(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .date(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .data(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        }
    }

    /// The value `--set` gives: JSON, or with `--type date` an ISO 8601 date and with `--type data` base64, which
    /// JSON has no form for.
    init(argument text: String, type: String?) throws {
        switch type {
        case nil: self = try AnyValue(json: try JSONValue.parse(text, option: "--set", fragments: true))
        case "date":
            guard let date = Self.date(from: text) else { throw UsageError("--set is not an ISO 8601 date: '\(text)'") }
            self = .date(date)
        case "data":
            guard let data = Data(base64Encoded: text) else { throw UsageError("--set is not base64: '\(text)'") }
            self = .data(data)
        case let other?: throw UsageError("--type takes date or data, not '\(other)'")
        }
    }

    /// A date as printed: ISO 8601 with fractions of a second.
    static func dateText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func date(from text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// The value as one line of JSON: a double keeps its fraction (`1.0`), keys are sorted, `/` is not escaped.
    var jsonText: String {
        switch self {
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .double(let value): return value.isFinite ? "\(value)" : "null"
        case .string(let value): return JSONValue.string(value)
        case .date(let value): return JSONValue.string(Self.dateText(value))
        case .data(let value): return JSONValue.string(value.base64EncodedString())
        case .array(let array): return "[" + array.map(\.jsonText).joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            return "{" + dictionary.keys.sorted().map { JSONValue.string($0) + ":" + (dictionary[$0]?.jsonText ?? "null") }
                .joined(separator: ",") + "}"
        }
    }

    /// The value of a JSON document (`JSONSerialization`'s output); null has no property-list counterpart.
    init(json: Any) throws {
        switch json {
        case let string as String: self = .string(string)
        case let number as NSNumber:
            // JSON's true and false are numbers of Objective-C type `char`.
            if String(cString: number.objCType) == "c" { self = .bool(number.boolValue) }
            // Integers read as integers, not through a double, which would change those past 2^53.
            else if !"dfD".contains(String(cString: number.objCType)) { self = .integer(number.intValue) }
            else { self = .double(number.doubleValue) }
        case let array as [Any]: self = .array(try array.map(AnyValue.init(json:)))
        case let dictionary as [String: Any]: self = .dictionary(try dictionary.mapValues(AnyValue.init(json:)))
        default: throw UsageError("--set holds null inside it, which a group value cannot hold (--set null alone resets it)")
        }
    }

    /// The value of a stored property list, each number as the type it was stored as.
    init(propertyList: Any) throws {
        switch propertyList {
        case let date as Date: self = .date(date)
        case let data as Data: self = .data(data)
        case let array as [Any]: self = .array(try array.map(AnyValue.init(propertyList:)))
        case let dictionary as [String: Any]: self = .dictionary(try dictionary.mapValues(AnyValue.init(propertyList:)))
        case is String, is NSNumber: self = try AnyValue(json: propertyList)
        default: throw UsageError("the stored value holds a \(type(of: propertyList)), which no property list holds")
        }
    }

    /// The value as JSON can show it: dates as ISO 8601 strings and data as base64, as `listen` prints them.
    var json: Any {
        switch self {
        case .bool(let value): return value
        case .integer(let value): return value
        case .double(let value): return value
        case .string(let value): return value
        case .date(let value): return Self.dateText(value)
        case .data(let value): return value.base64EncodedString()
        case .array(let array): return array.map(\.json)
        case .dictionary(let dictionary): return dictionary.mapValues(\.json)
        }
    }
}
