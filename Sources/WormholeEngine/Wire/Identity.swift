/// Who a listener is, decided once as its endpoint opens: one that lives and dies with its process, or a durable
/// client identity, whose socket name, registry entry and spool outlive each of its runs. Every "durable?"
/// question about a listener of this process is asked of it.
package enum Identity: Sendable, Hashable {
    case ephemeral
    case durable(String)

    /// A durable identity for a client identifier, an ephemeral one for nil.
    package init(clientIdentifier: String?) {
        self = clientIdentifier.map(Identity.durable) ?? .ephemeral
    }

    /// The client identifier of a durable identity; nil for an ephemeral one.
    package var clientIdentifier: String? {
        if case .durable(let name) = self { name } else { nil }
    }

    package var isDurable: Bool { clientIdentifier != nil }

    /// A listener's id: fresh and random for an ephemeral listener; a durable identity's own, the same in each of
    /// its runs, so that each run finds its socket name and spool (``RegistryEntry/durableListener(_:)``).
    package func makeListenerID() -> UInt64 {
        switch self {
        case .ephemeral: UInt64.random(in: 1...UInt64.max)
        case .durable(let name): RegistryEntry.durableListener(name)
        }
    }
}
