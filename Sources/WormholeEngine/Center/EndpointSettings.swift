/// What a center's configuration asks of its endpoint, as the engine knows it: the spool's bounds, the transport,
/// and whether its posts carry the relay's mark. The API's `GroupNotificationCenter.Configuration` makes one.
package struct EndpointSettings: Sendable, Hashable {
    package var maximumSpoolSize: Int
    package var maximumContainerSpoolSize: Int
    package var transport: SocketKind
    package var marksPostsAsRelayed: Bool

    package init(maximumSpoolSize: Int, maximumContainerSpoolSize: Int, transport: SocketKind, marksPostsAsRelayed: Bool) {
        self.maximumSpoolSize = maximumSpoolSize
        self.maximumContainerSpoolSize = maximumContainerSpoolSize
        self.transport = transport
        self.marksPostsAsRelayed = marksPostsAsRelayed
    }
}
