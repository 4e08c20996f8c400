import Foundation

/// Archives a userInfo dictionary with secure coding: property-list values with ``KeyedArchiveEncoder``, and a
/// userInfo that also holds `NSSecureCoding` classes of the user's own with Foundation's archiver, after
/// checking that every value can travel.
enum UserInfoEncoder {
    /// The keyed archive of `userInfo`.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` naming the key path of the first value that is neither
    ///   a property-list value nor `NSSecureCoding`.
    static func encode(_ userInfo: [AnyHashable: Any], maximumSize: Int) throws(WormholeError) -> [UInt8] {
        try encode(root: userInfo, maximumSize: maximumSize)
    }

    /// The archive of any property-list value or `NSSecureCoding` object graph.
    static func encode(root value: Any, maximumSize: Int) throws(WormholeError) -> [UInt8] {
        do {
            return try KeyedArchiveEncoder.encode(value, maximumSize: maximumSize)
        } catch let error as WormholeError {
            throw error
        } catch {
            // A class of the user's own: Foundation archives the whole value, after the checks below.
        }
        var budget = Budget(bytes: maximumSize)
        let root = try bridge(value, path: "userInfo", budget: &budget)
        do {
            let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: true)
            return [UInt8](data)
        } catch {
            throw WormholeError(.unsupportedValue, "the value could not be archived: \(error)")
        }
    }

    /// The Foundation object that stands for `value`, or an error naming where the value sits.
    /// What is left to spend: the bytes of strings and data, and nesting levels. An oversized or too deeply
    /// nested userInfo is refused before the archiver spends seconds on it (Linux Foundation's archiver slows
    /// down steeply with depth), and receivers refuse what is nested deeper than they decode anyway.
    private struct Budget {
        var bytes: Int
        var depth = KeyedArchiveDecoder.maximumDepth
    }

    private static func bridge(_ value: Any, path: String, budget: inout Budget) throws(WormholeError) -> NSObject {
        let object = try bridgeValue(value, path: path, budget: &budget)
        guard budget.bytes >= 0 else {
            throw WormholeError(.payloadTooLarge, "userInfo holds more than \(GroupNotificationCenter.maximumPayloadSize) bytes")
        }
        return object
    }

    private static func bridgeValue(_ value: Any, path: String, budget: inout Budget) throws(WormholeError) -> NSObject {
        switch value {
        case let number as NSNumber: return number
        case let string as String:
            budget.bytes -= string.utf8.count
            return NSString(string: string)
        case let flag as Bool: return NSNumber(value: flag)
        case let number as Int: return NSNumber(value: number)
        case let number as Int8: return NSNumber(value: number)
        case let number as Int16: return NSNumber(value: number)
        case let number as Int32: return NSNumber(value: number)
        case let number as Int64: return NSNumber(value: number)
        case let number as UInt: return NSNumber(value: number)
        case let number as UInt8: return NSNumber(value: number)
        case let number as UInt16: return NSNumber(value: number)
        case let number as UInt32: return NSNumber(value: number)
        case let number as UInt64: return NSNumber(value: number)
        case let number as Double: return NSNumber(value: number)
        case let number as Float: return NSNumber(value: number)
        case let date as Date: return NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
        case let data as Data:
            budget.bytes -= data.count
            return NSData(data: data)
        case let array as [Any]:
            try descend(path, &budget)
            defer { budget.depth += 1 }
            var items: [NSObject] = []
            items.reserveCapacity(array.count)
            for (index, item) in array.enumerated() {
                items.append(try bridge(item, path: "\(path)[\(index)]", budget: &budget))
            }
            return NSArray(array: items)
        case let dictionary as [AnyHashable: Any]:
            return try bridge(dictionary, path: path, budget: &budget)
        case let null as NSNull: return null
        case let object as NSObject:
            guard let secure = type(of: object) as? any NSSecureCoding.Type, secure.supportsSecureCoding else {
                throw unsupported(object, path)
            }
            return object
        default:
            throw unsupported(value, path)
        }
    }

    private static func bridge(_ dictionary: [AnyHashable: Any], path: String, budget: inout Budget)
        throws(WormholeError) -> NSDictionary
    {
        try descend(path, &budget)
        defer { budget.depth += 1 }
        let result = NSMutableDictionary(capacity: dictionary.count)
        for (key, value) in dictionary {
            let keyObject: NSObject
            switch key.base {
            case let string as String: keyObject = NSString(string: string)
            case let number as NSNumber: keyObject = number
            case let number as Int: keyObject = NSNumber(value: number)
            default:
                throw WormholeError(.unsupportedValue, "\(path) has a key of type \(type(of: key.base)); use String keys")
            }
            result[keyObject] = try bridge(value, path: "\(path)[\"\(key.base)\"]", budget: &budget)
        }
        return result
    }

    private static func descend(_ path: String, _ budget: inout Budget) throws(WormholeError) {
        budget.depth -= 1
        guard budget.depth >= 0 else {
            throw WormholeError(.unsupportedValue, "\(path) is nested deeper than \(KeyedArchiveDecoder.maximumDepth) levels")
        }
    }

    private static func unsupported(_ value: Any, _ path: String) -> WormholeError {
        WormholeError(.unsupportedValue, "\(path) is a \(type(of: value)), neither a property-list value nor NSSecureCoding")
    }
}
