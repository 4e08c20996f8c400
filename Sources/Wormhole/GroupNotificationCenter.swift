import Foundation

/// A `NotificationCenter` whose notifications reach observers in every process that shares a container:
/// an App Group container on Apple platforms, any folder of the user's on Linux.
///
/// Each observing process runs a local socket server in the container and records what it observes in a
/// file-locked registry there; a poster reads the registry and sends each matching listener the notification
/// directly, or writes it to that listener's spool when the listener cannot take it now (stopped, suspended,
/// busy). No daemon, no broker.
///
/// ```swift
/// let center = try GroupNotificationCenter(groupIdentifier: "group.com.example.app")
/// center.addObserver(forName: .init("cart.changed"), object: nil, queue: .main) { note in
///     print(note.userInfo?["count"] as? Int ?? 0)
/// }
/// center.post(name: .init("cart.changed"), object: "app", userInfo: ["count": 3])
/// ```
public final class GroupNotificationCenter: Sendable {
    /// The folder this center shares with the other processes of its group.
    public let containerURL: URL

    let endpoint: Endpoint
    /// Delivers to observers added without a queue, one at a time, in the order received.
    let serialQueue: DispatchQueue

    /// A center on the default container of an App Group.
    ///
    /// The container is `$WORMHOLE_CONTAINER_ROOT/<group>` if that variable is set, else
    /// `$XDG_RUNTIME_DIR/wormhole/<group>`, else `<tmp>/wormhole-<uid>/<group>`; on Apple platforms, the
    /// group's container from `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`.
    /// - Throws: ``WormholeError/Code/invalidContainer`` or ``WormholeError/Code/insecureContainer``.
    public convenience init(groupIdentifier: String) throws {
        try self.init(containerURL: URL(fileURLWithPath: try Container.defaultPath(forGroup: groupIdentifier)))
    }

    /// A center on any folder shared by the processes that talk. The folder is created (mode 0700) if missing.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when it is not a usable directory, and
    ///   ``WormholeError/Code/insecureContainer`` when another user owns it or group or others may write to it.
    public init(containerURL: URL) throws {
        self.containerURL = containerURL
        endpoint = try Endpoint.shared(path: containerURL.path)
        serialQueue = DispatchQueue(label: "Wormhole.GroupNotificationCenter")
    }

    deinit {
        let id = ObjectIdentifier(self)
        endpoint.remove { $0.center == id }
    }

    /// What this process has sent and received on this center's container.
    public var statistics: WormholeStatistics {
        endpoint.counters.snapshot
    }

    /// Sends warnings (dropped messages, refused userInfo, unreachable listeners) to `handler` instead of
    /// standard error; nil restores standard error.
    public static func setWarningHandler(_ handler: (@Sendable (String) -> Void)?) {
        Log.setHandler(handler)
    }
}
