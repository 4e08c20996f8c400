import Synchronization

/// One endpoint per container (and durable identity, and configuration) per process, shared by every center
/// opened there.
extension Endpoint {
    private final class WeakEndpoint: @unchecked Sendable {
        // Safe because it is read and written only under `table`'s lock.
        weak var endpoint: Endpoint?
        init(_ endpoint: Endpoint) { self.endpoint = endpoint }
    }

    private static let table = Mutex<[String: WeakEndpoint]>([:])
    /// The endpoint of the container at `path` (for `identity`, if durable), opened and checked on first use.
    /// An endpoint whose container was moved or recreated since is not reused.
    /// - Throws: ``WormholeError/Code/identityInUse`` when another live process runs `identity` there.
    package static func shared(
        path: String, identity: Identity, settings: EndpointSettings
    ) throws(WormholeError) -> Endpoint {
        let container = try Container(path: path)
        let key = (Sys.realPath(path) ?? path) + (identity.clientIdentifier.map { "\u{0}" + $0 } ?? "")
            + "\u{0}\(settings.maximumSpoolSize)/\(settings.maximumContainerSpoolSize)/\(settings.transport)"
        return try table.withLock { (table) throws(WormholeError) -> Endpoint in
            if let existing = table[key]?.endpoint, existing.container.identity == container.identity, existing.centers.adopt() {
                return existing
            }
            let endpoint = Endpoint(container: container, identity: identity, settings: settings)
            if identity.isDurable { try endpoint.reception.claimIdentity() }
            _ = endpoint.centers.adopt()
            table[key] = WeakEndpoint(endpoint)
            return endpoint
        }
    }

}
