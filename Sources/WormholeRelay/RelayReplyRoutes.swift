import Foundation
import Synchronization
import Wormhole

/// The ways back of the requests a relay (or a bridge) carried from the other device: for each reply name, an observer on an
/// ephemeral center of the group, open until the request's time is up (on this device's monotonic clock). A
/// reply posted in this group goes back to the other device only while its way back is open.
package final class RelayReplyRoutes: Sendable {
    private struct State {
        /// The open ways back, by reply name, and until when each stays open.
        var routes: [String: (token: any NSObjectProtocol, until: Int64)] = [:]
        /// The center the observers are on, made with the first.
        var center: GroupNotificationCenter?
        /// Where the replies go: the relay's taking of what this group posts.
        var deliver: (@Sendable (RelayedNotification) -> Void)?
    }

    private let containerURL: URL
    private let state = Mutex(State())

    /// The ways back of a relay on the group of `containerURL`.
    package init(containerURL: URL) {
        self.containerURL = containerURL
    }

    /// Sets where the replies that come in go; before any way back opens.
    package func deliver(to handler: @escaping @Sendable (RelayedNotification) -> Void) {
        state.withLock { $0.deliver = handler }
    }

    /// Whether a reply named `name` goes back: its way back is open.
    package func isOpen(_ name: String) -> Bool {
        state.withLock { $0.routes[name] != nil }
    }

    /// Opens the way back of replies named `replyTo` until `until`, or keeps the one open until then at least.
    /// Opened before the request is posted, so that no reply comes before its way back is open.
    /// - Throws: When the center the ways back are observed on cannot be made.
    package func open(_ replyTo: String, until: Int64) throws {
        try state.withLock { state in
            if let open = state.routes[replyTo] {
                state.routes[replyTo] = (open.token, max(open.until, until))
                return
            }
            let center = try state.center ?? GroupNotificationCenter(containerURL: containerURL)
            state.center = center
            let deliver = state.deliver
            let token = center.addRelayObserver(forName: replyTo) { deliver?($0) }
            state.routes[replyTo] = (token, until)
        }
    }

    /// Closes the way back of replies named `replyTo`: no request that uses it waits any more.
    package func close(_ replyTo: String) {
        state.withLock { state in
            guard let route = state.routes.removeValue(forKey: replyTo) else { return }
            state.center?.removeObserver(route.token)
        }
    }

    /// Closes the ways back whose time is up at `now`.
    package func closeExpired(now: Int64) {
        state.withLock { state in
            for (name, route) in state.routes where route.until <= now {
                state.center?.removeObserver(route.token)
                state.routes[name] = nil
            }
        }
    }

    /// Closes every way back: the relay closed, and a reply that comes later is not carried.
    package func closeAll() {
        state.withLock { state in
            for route in state.routes.values { state.center?.removeObserver(route.token) }
            state.routes = [:]
        }
    }
}
