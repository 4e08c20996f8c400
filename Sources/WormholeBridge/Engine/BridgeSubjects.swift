import Foundation
import WormholeEngine
import WormholeRelay

/// How the bridge names things on the server, from its subject prefix (`wormhole` unless given another, so that
/// several applications share a server): each notification name under `<prefix>.n.`, mapped reversibly
/// (``NATSSubject``); the stream that keeps them; a host's durable consumer; requests under `<prefix>.q.`.
struct BridgeSubjects: Sendable {
    let prefix: String

    /// - Throws: ``BridgeError`` when `prefix` is not dot-separated tokens of letters, digits, `-` and `_`.
    init(prefix: String) throws(BridgeError) {
        guard NATSSubject.isValidPrefix(prefix) else {
            throw BridgeError("subject prefix \"\(prefix)\" is not tokens of letters, digits, - and _, separated by dots")
        }
        self.prefix = prefix
    }

    /// Where notifications go: every subject under `<prefix>.n.`.
    var notifications: String { prefix + ".n.>" }

    /// The subject of notifications named `name`.
    func subject(for name: String) -> String { prefix + ".n." + NATSSubject.tail(for: name) }

    /// The name a subject of notifications stands for; nil for a subject that is not one.
    func name(for subject: String) -> String? {
        let head = prefix + ".n."
        guard subject.hasPrefix(head) else { return nil }
        return NATSSubject.name(fromTail: String(subject.dropFirst(head.count)))
    }

    /// The subject of a request for `name` from `object`: `<prefix>.q.n.<name>` without a sender tag,
    /// `<prefix>.q.o.<tag>.<name>` with one (the tag one token). Which a responder's subscription covers says
    /// which requests it answers, so the server says at once when none does.
    ///
    /// A name's tail or a tag's token longer than ``longestRequestPart`` bytes (a long name, or one of many bytes
    /// outside ASCII, which escape to three each) is one token of its digest instead (``digestToken(for:)``):
    /// the subject stays within what a server reads, and requests for that name still cross.
    func request(for name: String, object: String?) -> String {
        let tail = Self.requestTail(for: name)
        guard let object else { return prefix + ".q.n." + tail }
        return prefix + ".q.o." + Self.requestToken(for: object) + "." + tail
    }

    /// The subjects a responder for `name` subscribes to: every request for it when `object` is nil (with a
    /// sender tag or without), else those from `object` only, as a responder in the group gets them.
    func responder(for name: String, object: String?) -> [String] {
        let tail = Self.requestTail(for: name)
        guard let object else { return [prefix + ".q.n." + tail, prefix + ".q.o.*." + tail] }
        return [prefix + ".q.o." + Self.requestToken(for: object) + "." + tail]
    }

    /// The longest tail or token of a request's subject written as its text: 1 KiB, so that a subject of a name
    /// and a tag stays within ``Limits/natsLongestSubject`` whatever their length.
    static let longestRequestPart = 1024

    private static func requestTail(for name: String) -> String {
        let tail = NATSSubject.tail(for: name)
        return tail.utf8.count <= longestRequestPart ? tail : digestToken(for: name)
    }

    private static func requestToken(for object: String) -> String {
        let token = NATSSubject.token(for: object)
        return token.utf8.count <= longestRequestPart ? token : digestToken(for: object)
    }

    /// `#` and 32 hexadecimal digits: two 64-bit FNV-1a hashes of `text`. `#` is never in a tail or token written
    /// as its text (it escapes), so a digest stands for no such text. Not a cryptographic digest: two texts that
    /// share one make a request reach a host whose responders answer the other, which drops it (its requester
    /// then times out).
    static func digestToken(for text: String) -> String {
        let bytes = Array(text.utf8)
        return "#" + FileName.hex(FileName.fnv1a(bytes)) + FileName.hex(FileName.fnv1a([0x23] + bytes))
    }

    /// Where retained notifications and group values go: every subject under `<prefix>.e.`.
    var entries: String { prefix + ".e.>" }

    /// The subject of a retained name (`<prefix>.e.r.…`) or a group value (`<prefix>.e.v.…`).
    func subject(for entry: SyncedEntry) -> String {
        prefix + (entry.kind == .retained ? ".e.r." : ".e.v.") + NATSSubject.tail(for: entry.name)
    }

    /// The stream that keeps the last of each retained name and group value.
    var entriesStream: String { stream + "_ENTRIES" }

    /// The durable consumer of the entries' stream of the host `device`.
    func entriesConsumer(for device: UInt64) -> String { consumer(for: device) + "-entries" }

    /// The stream that keeps the notifications: the prefix in capitals, dots as underscores.
    var stream: String { "WORMHOLE_" + prefix.uppercased().replacingOccurrences(of: ".", with: "_") }

    /// The durable consumer of the host `device`.
    func consumer(for device: UInt64) -> String { "host-" + String(device, radix: 16) }
}
