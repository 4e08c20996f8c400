import Foundation
import Wormhole

/// Any value a property list holds, as a `Codable` type: what `wormhole value` reads and writes, whatever type
/// the processes that share the value use. Integers are exact across the whole `Int64` and `UInt64` ranges;
/// null is what a stored `NSNull` reads as.
indirect enum AnyValue: Codable, Sendable {
    case bool(Bool), integer(Int64), unsigned(UInt64), double(Double), string(String), date(Date), data(Data)
    case array([AnyValue]), dictionary([String: AnyValue]), null

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
            if single.decodeNil() { self = .null }
            else if let value = try? single.decode(Bool.self) { self = .bool(value) }
            else if let value = try? single.decode(Int64.self) { self = .integer(value) }
            else if let value = try? single.decode(UInt64.self) { self = .unsigned(value) }
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
        case .unsigned(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .null: var container = encoder.singleValueContainer(); try container.encodeNil()
        case .double(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .string(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .date(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        case .data(let value): var container = encoder.singleValueContainer(); try container.encode(value)
        }
    }

    /// The value `--set` gives: JSON, or with `--type date` an ISO 8601 date (as ``ISO8601`` reads it) and with
    /// `--type data` base64, which JSON has no form for; nil for JSON's `null`, which resets the value.
    static func argument(_ text: String, type: String?) throws(UsageError) -> AnyValue? {
        switch type {
        case nil:
            // The value is one level inside the userInfo it is stored in.
            let json = try JSONReader.parse(text, option: "--set", maximumDepth: GroupNotificationCenter.maximumNestingDepth - 1)
            return json == .null ? nil : AnyValue(json: json)
        case "date":
            do {
                return .date(try ISO8601.date(from: text))
            } catch {
                let shown = text.count > 40 ? text.prefix(40) + "…" : text
                throw UsageError("--set '\(shown)' is not an ISO 8601 date: \(error)")
            }
        case "data":
            guard let data = Data(base64Encoded: text) else { throw UsageError("--set is not base64: '\(text)'") }
            return .data(data)
        case let other?: throw UsageError("--type takes date or data, not '\(other)'")
        }
    }

    /// The value as JSON: a date as an ISO 8601 string, data as base64, a real always with its fraction.
    var json: JSONValue {
        switch self {
        case .bool(let value): .bool(value)
        case .integer(let value): .integer(value)
        case .unsigned(let value): .unsigned(value)
        case .double(let value): .real(value)
        case .string(let value): .string(value)
        case .date(let value): JSONValue(date: value)
        case .data(let value): .string(value.base64EncodedString())
        case .array(let array): .array(array.map(\.json))
        case .dictionary(let dictionary): .object(dictionary.mapValues(\.json))
        case .null: .null
        }
    }

    /// The value of JSON the user gave.
    init(json: JSONValue) {
        switch json {
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .integer(value)
        case .unsigned(let value): self = .unsigned(value)
        case .real(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .array(let items): self = .array(items.map(AnyValue.init(json:)))
        case .object(let members): self = .dictionary(members.mapValues(AnyValue.init(json:)))
        // Inside a value, null is stored as NSNull, as a typed process stores nil; --set null alone is a reset.
        case .null: self = .null
        }
    }

    /// The value of a stored property list, each number as the type it was stored as; NSNull is null.
    init(propertyList: Any) throws {
        switch propertyList {
        case let string as String: self = .string(string)
        case let date as Date: self = .date(date)
        case let data as Data: self = .data(data)
        case let number as NSNumber:
            switch JSONValue(number: number) {
            case .bool(let value): self = .bool(value)
            case .unsigned(let value): self = .unsigned(value)
            case .real(let value): self = .double(value)
            default: self = .integer(number.int64Value)
            }
        case is NSNull: self = .null
        case let array as [Any]: self = .array(try array.map(AnyValue.init(propertyList:)))
        case let dictionary as [String: Any]: self = .dictionary(try dictionary.mapValues(AnyValue.init(propertyList:)))
        default: throw ToolFailure("the stored value holds a \(type(of: propertyList)), which no property list holds")
        }
    }
}
