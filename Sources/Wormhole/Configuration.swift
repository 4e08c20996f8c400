import WormholeEngine

extension GroupNotificationCenter {
    /// Limits a center applies to what it writes into the container, and the transport it listens on, with
    /// defaulted values.
    ///
    /// Each posting process enforces the limits of the center it posts with; processes that share a container
    /// should use the same ones.
    public struct Configuration: Sendable, Hashable {
        /// The most bytes one listener's spool may hold. A post that would pass it is not spooled for that
        /// listener; the reporting post lists it with ``WormholeError/Code/spoolFull``.
        public var maximumSpoolSize: Int
        /// The most bytes all the spools of the container may hold together, so that many stopped or offline
        /// listeners cannot fill the disk (or, for `$XDG_RUNTIME_DIR`, memory). Past it, posts that must spool
        /// report ``WormholeError/Code/spoolFull``.
        public var maximumContainerSpoolSize: Int
        /// The socket this process's listener receives on. Posting speaks whichever transport each listener
        /// registered, whatever this says.
        public var transport: Transport
        /// Whether this center's posts carry the relay's mark (``RelayMark``): only a relay's center sets it, so
        /// that it knows its own posts and never sends them back where they came from.
        package var marksPostsAsRelayed = false

        /// Limits of your choosing; each left out keeps its default.
        /// - Parameters:
        ///   - maximumSpoolSize: Per listener; 128 MiB by default (``GroupNotificationCenter/maximumSpoolSize``).
        ///   - maximumContainerSpoolSize: For the whole container; 512 MiB by default
        ///     (``GroupNotificationCenter/maximumContainerSpoolSize``).
        ///   - transport: The socket this process listens on; by default
        ///     ``GroupNotificationCenter/Transport/processDefault``.
        public init(
            maximumSpoolSize: Int = GroupNotificationCenter.maximumSpoolSize,
            maximumContainerSpoolSize: Int = GroupNotificationCenter.maximumContainerSpoolSize,
            transport: GroupNotificationCenter.Transport = .processDefault
        ) {
            self.maximumSpoolSize = maximumSpoolSize
            self.maximumContainerSpoolSize = maximumContainerSpoolSize
            self.transport = transport
        }

        /// What the engine is asked for.
        var settings: EndpointSettings {
            EndpointSettings(
                maximumSpoolSize: maximumSpoolSize, maximumContainerSpoolSize: maximumContainerSpoolSize,
                transport: transport.socketKind, marksPostsAsRelayed: marksPostsAsRelayed)
        }

        /// The configuration an endpoint was opened with.
        init(_ settings: EndpointSettings) {
            self.init(
                maximumSpoolSize: settings.maximumSpoolSize, maximumContainerSpoolSize: settings.maximumContainerSpoolSize,
                transport: Transport(settings.transport))
            marksPostsAsRelayed = settings.marksPostsAsRelayed
        }
    }
}
