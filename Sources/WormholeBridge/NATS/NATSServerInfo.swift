import Foundation

/// What a server says of itself in INFO: the first thing it sends, and again when the cluster changes.
///
/// Every field is optional on the wire: one that is absent takes its default, so an older or smaller server (or a
/// newer one with fields of its own, which are ignored) still reads. INFO whose JSON does not decode as an object
/// with these types is a protocol error.
struct NATSServerInfo: Sendable, Equatable, Decodable {
    /// The server's identity (`server_id`), empty when absent.
    var serverID: String
    /// The server's version ("2.9.10"), empty when absent.
    var version: String
    /// The largest message (headers and payload) the server accepts (`max_payload`); 1 MiB when absent. One that
    /// is not positive is a protocol error; one over ``largestMaxPayload`` is taken as that, so that what is
    /// read within it can be held, and added to, without overflowing.
    var maxPayload: Int
    /// Whether the server understands headers (HPUB, HMSG); false when absent.
    var headers: Bool
    /// Whether CONNECT must carry credentials (`auth_required`); false when absent.
    var authRequired: Bool
    /// The protocol level (1 for servers that send INFO on cluster changes); 0 when absent.
    var proto: Int
    /// Whether JetStream is enabled (`jetstream`); false when absent.
    var jetStream: Bool
    /// Other servers of the cluster a client may connect to (`connect_urls`); empty when absent.
    var connectURLs: [String]

    /// The maximum payload a server that does not say has: 1 MiB, the server's default.
    static let defaultMaxPayload = 1 << 20
    /// The most a server's `max_payload` is taken to be, whatever its INFO says: 64 MiB, the most `nats-server`
    /// itself allows. A message claiming more is refused before anything is read or reserved for it.
    static let largestMaxPayload = 64 << 20

    init(
        serverID: String = "", version: String = "", maxPayload: Int = NATSServerInfo.defaultMaxPayload,
        headers: Bool = false, authRequired: Bool = false, proto: Int = 0, jetStream: Bool = false,
        connectURLs: [String] = []
    ) {
        self.serverID = serverID
        self.version = version
        self.maxPayload = maxPayload
        self.headers = headers
        self.authRequired = authRequired
        self.proto = proto
        self.jetStream = jetStream
        self.connectURLs = connectURLs
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverID = try container.decodeIfPresent(String.self, forKey: .serverID) ?? ""
        version = try container.decodeIfPresent(String.self, forKey: .version) ?? ""
        maxPayload = try container.decodeIfPresent(Int.self, forKey: .maxPayload) ?? Self.defaultMaxPayload
        // The parser's limit comes from here: a server that allows no message at all is not one to talk to.
        guard maxPayload > 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .maxPayload, in: container, debugDescription: "max_payload \(maxPayload) is not positive")
        }
        maxPayload = min(maxPayload, Self.largestMaxPayload)
        headers = try container.decodeIfPresent(Bool.self, forKey: .headers) ?? false
        authRequired = try container.decodeIfPresent(Bool.self, forKey: .authRequired) ?? false
        proto = try container.decodeIfPresent(Int.self, forKey: .proto) ?? 0
        jetStream = try container.decodeIfPresent(Bool.self, forKey: .jetStream) ?? false
        connectURLs = try container.decodeIfPresent([String].self, forKey: .connectURLs) ?? []
    }

    /// Reads the JSON that follows `INFO`.
    /// - Throws: when it is not a JSON object or a field has another type than the one above.
    init(json: some Collection<UInt8>) throws(NATSProtocolError) {
        do {
            self = try JSONDecoder().decode(NATSServerInfo.self, from: Data(json))
        } catch {
            throw NATSProtocolError("INFO whose JSON does not decode: \(error)")
        }
    }

    private enum CodingKeys: String, CodingKey {
        case serverID = "server_id"
        case version
        case maxPayload = "max_payload"
        case headers
        case authRequired = "auth_required"
        case proto
        case jetStream = "jetstream"
        case connectURLs = "connect_urls"
    }
}
