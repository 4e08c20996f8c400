import Foundation

/// Reads a property list that another device, another host or a file in the container handed over: a binary
/// property list only, as the relay and the bridge write them.
///
/// `PropertyListDecoder` also takes XML, whose Foundation parser recurses once per nested element before the
/// decoder looks at a single field: some 20,000 nested `<array>` elements (140 KB, well within what a server
/// carries or a link transfers) overflow any thread's stack and kill the process. The binary reader goes only
/// where the decoded type leads.
package enum StrictPropertyList {
    private static let header = Array("bplist00".utf8)

    /// The `T` that `bytes` holds.
    /// - Throws: ``RelayLinkError`` when `bytes` is not a binary property list; the decoder's error when it does
    ///   not hold a `T`.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        guard bytes.starts(with: header) else {
            throw RelayLinkError(.failed, "not a binary property list")
        }
        return try PropertyListDecoder().decode(type, from: Data(bytes))
    }
}
