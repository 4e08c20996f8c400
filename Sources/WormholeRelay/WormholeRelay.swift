import Dispatch
import Foundation
import Synchronization
import Wormhole

/// Carries notifications, retained notifications and group values between the group on this device and the
/// group on another (the iPhone's and the Apple Watch's), through a ``RelayLink``: one relay in each app.
///
/// ```swift
/// let relay = try WormholeRelay(
///     containerURL: GroupNotificationCenter.defaultContainerURL(groupIdentifier: "group.com.example.app"),
///     routes: [.notifications(named: "cart.changed"), .retained(named: "nowPlaying"), .value(named: "unread")],
///     link: WatchSessionLink())
/// relay.start()
/// ```
///
/// What crosses reaches every matching observer on the other side with the guarantees it has inside one group:
/// each notification once, in each poster's order, also when it was posted while either app was not running or
/// the devices were out of reach. The relay is a durable listener of its group (client identifier
/// `wormhole.relay` unless given another), so what is posted while it is not running waits in its spool; what it
/// took waits in its outbox in the container until the other side acknowledges having posted it, and is sent
/// again on each start. The receiving relay remembers, per device and poster, what it posted, and drops what
/// comes again. A retained notification is the latest of its name on both devices, and a group value converges
/// to the same value: writes on the two devices are ordered by the time the writer's relay saw them, the device
/// breaking ties, and the last one wins (``Wormhole/GroupValue/update(_:)`` stays atomic within a device only).
///
/// Nothing the relay posts is sent back: its posts carry its mark. Errors the link reports are counted in
/// ``status`` and logged; ``statuses()`` follows them.
public final class WormholeRelay: Sendable {
    /// The client identifier of the relay's center, unless another is given.
    public static let defaultClientIdentifier = "wormhole.relay"

    private let engine: RelayEngine
    private let center: GroupNotificationCenter
    /// Its place in this process's table of relays, given up when it closes.
    private let key: RelayClaims.Key
    /// The relay's observers while it runs.
    private let tokens = Mutex<[any NSObjectProtocol]>([])
    /// Whether it was closed; changed and read under the lock of `tokens`, so that `start()` and `close()` never
    /// see the other half done.
    private let closed = Atomic<Bool>(false)
    private let timer: RelayTimer

    /// A relay between `containerURL`'s group and the other device's, over `link`. Nothing moves until
    /// ``start()``.
    /// - Parameters:
    ///   - containerURL: The group's container.
    ///   - routes: What crosses, and which way.
    ///   - link: The link to the other device: `WatchSessionLink()` between an iPhone app and its Watch app.
    ///   - clientIdentifier: The relay's durable identity in the group; one relay per container.
    /// - Throws: The errors of ``Wormhole/GroupNotificationCenter/init(containerURL:clientIdentifier:)``;
    ///   ``Wormhole/WormholeError/Code/identityInUse`` when another relay runs on the container with this client
    ///   identifier, in another process or in this one (until that one is closed);
    ///   ``Wormhole/WormholeError/Code/invalidContainer`` when `relay/`, `relay/<client identifier>/` or its
    ///   `outbox/` in the container is a symbolic link or not a directory, and
    ///   ``Wormhole/WormholeError/Code/insecureContainer`` when one is another user's or writable by group or
    ///   others: the relay reaches its files only through its own folders, never through a link, and touches
    ///   nothing outside the container. A system error when its files cannot be made.
    public init(
        containerURL: URL, routes: [RelayRoute], link: any RelayLink,
        clientIdentifier: String = WormholeRelay.defaultClientIdentifier
    ) throws {
        let center = try GroupNotificationCenter(relayContainerURL: containerURL, clientIdentifier: clientIdentifier)
        // The container the center opened, by descriptor: its path may name another folder by now.
        let container = try center.containerFolder()
        let key = RelayClaims.Key(container: container.identity, clientIdentifier: clientIdentifier)
        engine = try RelayClaims.claim(key) { generation in
            // Each folder opened beneath the one above it, without following a link.
            let folder = try container.folder("relay", create: true).folder(Self.folderName(clientIdentifier), create: true)
            return try RelayEngine(
                folder: folder, key: key, generation: generation, routes: routes, link: link, center: center)
        }
        self.center = center
        self.key = key
        timer = RelayTimer()
    }

    deinit {
        close()
    }

    /// The relay's folder for `clientIdentifier`: the identifier itself when it is a plain name (letters, digits,
    /// `.`, `-`, `_`, not starting with `.`), else its UTF-8 bytes in hex, so that no identifier names a path
    /// outside `relay/`.
    package static func folderName(_ clientIdentifier: String) -> String {
        let plain = clientIdentifier.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
        }
        if plain, !clientIdentifier.hasPrefix(".") { return clientIdentifier }
        return "x-" + clientIdentifier.utf8.map { String(format: "%02x", $0) }.joined()
    }

    /// Activates the link, and starts taking what this group posts and posting what the other device sends.
    /// Calling it again, or after ``close()``, does nothing: a closed relay is not started again (make a new one
    /// for the same container; it goes on from where this one stopped).
    public func start() {
        tokens.withLock { tokens in
            guard tokens.isEmpty, !closed.load(ordering: .relaxed) else { return }
            let engine = self.engine
            var observers: [GroupNotificationCenter.RelayObserver] = []
            for name in engine.routes.observedNames {
                observers.append((name, { engine.taken($0) }))
            }
            for entry in engine.routes.sentEntries {
                let name = entry.kind == .value ? GroupNotificationCenter.valueNotificationName(for: entry.name) : entry.name
                observers.append((name, { _ in engine.scanSoon() }))
            }
            // Together: posters never see a part of the relay's names, and spool for it all along.
            tokens = center.addRelayObservers(observers)
            center.deliverSpooledNotifications()
            engine.activate()
            timer.source.setEventHandler { engine.tick() }
        }
    }

    /// Stops taking and posting. What waits stays in the container for the next start, and so does what this
    /// group posts under the relay's names meanwhile. Once closed, a new relay of this process may start on the
    /// container with the same client identifier.
    public func close() {
        timer.source.cancel()
        let removed = tokens.withLock { tokens in
            closed.store(true, ordering: .relaxed)
            defer { tokens = [] }
            return tokens
        }
        // Its names stay registered: what is posted until the next start waits in its spool.
        center.removeRelayObservers(removed)
        engine.close()
        RelayClaims.release(key, by: engine)
    }

    /// What the relay is doing now.
    public var status: RelayStatus { engine.status }

    /// The status now, then each change of it; the newest only for a reader that falls behind.
    public func statuses() -> AsyncStream<RelayStatus> {
        engine.statuses()
    }
}

/// The relay's timer: once a second it looks for retained notifications and group values changed without an
/// announcement, and for what waits to be sent.
/// Safe because the source is set up before it is shared, and `DispatchSource` is thread-safe after that.
private final class RelayTimer: @unchecked Sendable {
    let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())

    init() {
        let tick = DispatchTimeInterval.milliseconds(Int(Limits.relayTick / .milliseconds(1)))
        source.schedule(deadline: .now() + tick, repeating: tick)
        // Resumed at once (a suspended source must not be released): it does nothing until given a handler.
        source.resume()
    }

    deinit {
        source.cancel()
    }
}
