import Foundation
import WormholeEngine

/// A `NotificationCenter` whose notifications reach observers in every process that shares a container:
/// an App Group container on Apple platforms, any folder of the user's on Linux.
///
/// Each observing process runs a local socket server in the container and records what it observes in a
/// registry there (no file is ever locked); a poster reads the registry and sends each matching listener the notification
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
    /// Where replies to this center's requests come back.
    let replies = ReplyChannel()

    /// A center on the default container of an App Group.
    ///
    /// The container is `$WORMHOLE_CONTAINER_ROOT/<group>` if that variable is set, else
    /// `$XDG_RUNTIME_DIR/wormhole/<group>`, else `<tmp>/wormhole-<uid>/<group>`; on Apple platforms, a
    /// `Wormhole` folder inside the group's container from
    /// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`.
    /// - Parameter groupIdentifier: The App Group's identifier, e.g. `group.com.example.app`.
    /// - Throws: ``WormholeError/Code/invalidContainer`` or ``WormholeError/Code/insecureContainer``.
    public convenience init(groupIdentifier: String) throws {
        try self.init(containerURL: URL(fileURLWithPath: try Container.defaultPath(forGroup: groupIdentifier)))
    }

    /// A center on any folder shared by the processes that talk. The folder is created (mode 0700) if missing.
    /// - Parameter containerURL: The shared folder, a file URL.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when it is not a usable directory, and
    ///   ``WormholeError/Code/insecureContainer`` when another user owns it or group or others may write to it.
    public convenience init(containerURL: URL) throws {
        try self.init(containerURL: containerURL, clientIdentifier: nil)
    }

    /// A center on a container that exists already, for tools that only read (`wormhole status`): creates
    /// nothing, not even the folder.
    /// - Parameter containerURL: The folder of an existing container.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when no Wormhole container is at `containerURL`; the
    ///   errors of ``init(containerURL:)``.
    public convenience init(existingContainerURL containerURL: URL) throws {
        guard Container.exists(at: containerURL.path) else {
            throw WormholeError(.invalidContainer, "no Wormhole container at \(containerURL.path)")
        }
        try self.init(containerURL: containerURL)
    }

    /// The default container of an App Group (see ``init(groupIdentifier:)``), without creating anything.
    /// - Parameter groupIdentifier: The App Group's identifier.
    /// - Returns: The folder a center of that group would use; it may not exist yet.
    /// - Throws: ``WormholeError/Code/invalidContainer`` when the identifier cannot name a folder.
    public static func defaultContainerURL(groupIdentifier: String) throws -> URL {
        URL(fileURLWithPath: try Container.defaultPath(forGroup: groupIdentifier, create: false))
    }

    /// A durable center on the default container of an App Group: see ``init(containerURL:clientIdentifier:)``.
    /// - Parameters:
    ///   - groupIdentifier: The App Group's identifier.
    ///   - clientIdentifier: The durable identity, e.g. `widget`: 1 to ``maximumNameLength`` bytes.
    /// - Throws: As ``init(containerURL:clientIdentifier:)``.
    public convenience init(groupIdentifier: String, clientIdentifier: String) throws {
        try self.init(
            containerURL: URL(fileURLWithPath: try Container.defaultPath(forGroup: groupIdentifier)),
            clientIdentifier: clientIdentifier)
    }

    /// A durable center: its registration and spool outlive the process, so that nothing is missed while no
    /// process runs as `clientIdentifier` (a widget, an extension that is not running).
    ///
    /// While no process runs it, posts that match the subscriptions of its last run are spooled under the
    /// identity (up to ``maximumSpoolSize``; past it, posts report ``WormholeError/Code/spoolFull``). The next
    /// process that opens a center with the same identity receives each of them, once and in per-poster order,
    /// when it adds an observer they match; until then they wait in the spool, and so does what is posted to the
    /// identity before its first observer is added.
    ///
    /// The spool is handed over 0.2 seconds after the last of the observers that start-up code adds one after
    /// another (at most 5 seconds after the first), so that every one of them, whatever its form, receives the
    /// whole backlog, then what was posted meanwhile, in order; ``deliverSpooledNotifications()`` hands it over
    /// at once. An observer added once the hand-over began receives what is handed over or posted from then on,
    /// and later what the spool still holds that no earlier observer matched. An identity unseen for
    /// ``maximumDurableAge`` is removed with its spool. With `clientIdentifier` nil, the center is ephemeral.
    /// - Parameters:
    ///   - containerURL: The shared folder; created (mode 0700) if missing.
    ///   - clientIdentifier: The durable identity, 1 to ``maximumNameLength`` bytes, or nil for an ephemeral center.
    /// - Throws: ``WormholeError/Code/identityInUse`` when another live process already runs `clientIdentifier`
    ///   on this container; ``WormholeError/Code/invalidNotification`` for an empty or too long
    ///   `clientIdentifier`; the container errors of ``init(containerURL:)``.
    public convenience init(containerURL: URL, clientIdentifier: String?) throws {
        try self.init(containerURL: containerURL, clientIdentifier: clientIdentifier, configuration: Configuration())
    }

    /// A center with limits of its own (see ``Configuration``); otherwise as ``init(containerURL:clientIdentifier:)``.
    /// - Parameters:
    ///   - containerURL: The shared folder; created (mode 0700) if missing.
    ///   - clientIdentifier: The durable identity, or nil for an ephemeral center.
    ///   - configuration: The spool limits this center applies to what it posts.
    /// - Throws: As ``init(containerURL:clientIdentifier:)``.
    public init(containerURL: URL, clientIdentifier: String?, configuration: Configuration) throws {
        if let clientIdentifier, clientIdentifier.isEmpty || clientIdentifier.utf8.count > Self.maximumNameLength {
            throw WormholeError(.invalidNotification, "a client identifier must be 1 to \(Self.maximumNameLength) bytes long")
        }
        self.containerURL = containerURL
        endpoint = try Endpoint.shared(
            path: containerURL.path, identity: Identity(clientIdentifier: clientIdentifier), settings: configuration.settings)
        serialQueue = DispatchQueue(label: "Wormhole.GroupNotificationCenter")
    }

    /// The client identifier of a durable center; nil for an ephemeral one.
    public var clientIdentifier: String? { endpoint.identity.clientIdentifier }

    /// Hands what a durable center's spool holds to the observers added so far, now: call it once start-up code
    /// has added its observers, rather than let the center wait for more.
    ///
    /// Without it, a durable center hands its spool over 0.2 seconds after the last observer that start-up code
    /// adds (at most 5 seconds after the first), so that each observer added meanwhile receives the whole
    /// backlog. The hand-over goes on the center's receive thread; this returns at once. An observer added
    /// afterwards receives what is handed over or posted from then on, and later what the spool still holds
    /// that no earlier observer matched. Not an error: calling it on an ephemeral center, before any observer
    /// was added (the spool waits for the first), or when nothing waits; then it does nothing.
    public func deliverSpooledNotifications() {
        endpoint.handOverSpool()
    }

    deinit {
        endObservers()
        endpoint.centerClosed()
    }

    /// Ends this center's observers now, as releasing it does: none of their blocks starts after this returns,
    /// and a durable center's give back what they were handed and did not run, keeping their subscriptions.
    /// For code that must stop taking at once while something else may still hold the center (a command that
    /// stops after its last notification).
    package func endObservers() {
        let id = ObjectIdentifier(self)
        endpoint.remove(publish: !endpoint.identity.isDurable) { $0.center == id }
    }

    /// What this process has sent and received on this center's container.
    public var statistics: WormholeStatistics {
        endpoint.counters.snapshot
    }

    /// Sends warnings (dropped messages, refused userInfo, unreachable listeners) to `handler` instead of
    /// standard error; nil restores standard error.
    /// - Parameter handler: Receives each warning as one line of text (already escaped); it is process-wide.
    public static func setWarningHandler(_ handler: (@Sendable (String) -> Void)?) {
        Log.setHandler(handler)
    }
}
