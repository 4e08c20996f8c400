import Foundation

/// Reads what another client of the server sent as one of the bridge's property lists: a binary property list
/// only, as the bridge writes them.
///
/// `PropertyListDecoder` also takes XML, whose Foundation parser recurses once per nested element before the
/// decoder looks at a single field: a message of some 20,000 nested `<array>` elements (140 KB, well within
/// what a server carries) overflows any thread's stack and kills the process. The binary reader goes only
/// where the decoded type leads.
enum BridgePropertyList {
    private static let header = Array("bplist00".utf8)

    /// The `T` that `payload` holds.
    /// - Throws: When `payload` is not a binary property list, or does not hold a `T`.
    static func decode<T: Decodable>(_ type: T.Type, from payload: some Collection<UInt8>) throws -> T {
        guard payload.starts(with: header) else {
            throw BridgeError("not a binary property list")
        }
        return try PropertyListDecoder().decode(type, from: Data(payload))
    }
}
