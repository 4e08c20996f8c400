import Wormhole

/// What a relay carries, decided in one place: whether a notification posted in this group goes to the other
/// device and as what, whether one from the other device is posted here and as what, which names the relay
/// observes, and which retained notifications and group values it keeps the same on both sides.
///
/// A plain value made from the relay's ``RelayRoute``s; it knows nothing of the link.
package struct RelayRoutes: Sendable {
    /// The routes as given.
    let all: [RelayRoute]

    package init(_ routes: [RelayRoute]) {
        all = routes
    }

    /// How a notification crosses.
    package enum Carried: Sendable, Hashable {
        /// An ordinary notification: posted on the other side as it was here.
        case notification
        /// A request (``RelayRoute/Kind/requests(name:)``): it crosses with the time it has left, and opens its
        /// replies' way back on the receiving side.
        case request
        /// A reply to a request the other side's relay carried here: it goes back only while that request's way
        /// back is open (on the sending side), and only to a side whose requests cross (on the receiving side).
        case reply
    }

    /// Whether a notification this group posted goes to the other device, and as what; nil when it does not.
    /// What a relay posted itself (its mark) never goes back. A reply is decided here by its name only: whether
    /// its way back is open is the relay's to say (``RelayReplyRoutes``).
    package func outgoing(_ note: RelayedNotification) -> Carried? {
        guard !note.isRelayed else { return nil }
        if GroupNotificationCenter.isReplyName(note.name) { return .reply }
        guard sends(notification: note.name) else { return nil }
        return sends(request: note.name) ? .request : .notification
    }

    /// Whether a notification named `name` from the other device is posted here, and as what; nil when no route
    /// takes it (it is dropped and counted).
    package func incoming(_ name: String) -> Carried? {
        if GroupNotificationCenter.isReplyName(name), sendsRequests { return .reply }
        guard receives(notification: name) else { return nil }
        return receives(request: name) ? .request : .notification
    }

    /// The names of notifications to observe: nil stands for every name (a prefix route), which matches no
    /// request's name: those are named each.
    package var observedNames: [String?] {
        var names: [String?] = []
        var everyName = false
        for route in all where route.direction.sends {
            switch route.kind {
            case .notifications(let name): names.append(name)
            case .notificationsPrefixed: everyName = true
            case .requests(let name): names.append(GroupNotificationCenter.requestName(for: name))
            case .retained, .value: break
            }
        }
        if everyName { names = [nil] + names.filter { $0.map { $0.hasPrefix(Self.reservedPrefix) } ?? false } }
        var seen = Set<String?>()
        return names.filter { seen.insert($0).inserted }
    }

    /// Whether a route carries requests, either way.
    package var carriesRequests: Bool {
        all.contains { if case .requests = $0.kind { true } else { false } }
    }

    /// The retained names and value names, each with its direction.
    package var synced: [(entry: SyncedEntry, direction: RelayRoute.Direction)] {
        all.compactMap { route in
            switch route.kind {
            case .retained(let name): (SyncedEntry(kind: .retained, name: name), route.direction)
            case .value(let name): (SyncedEntry(kind: .value, name: name), route.direction)
            case .notifications, .notificationsPrefixed, .requests: nil
            }
        }
    }

    /// The retained names and value names this side sends, in the order of the routes.
    package var sentEntries: [SyncedEntry] {
        synced.compactMap { $0.direction.sends ? $0.entry : nil }
    }

    /// Whether the retained name or value `entry` from the other device is applied here.
    package func receives(_ entry: SyncedEntry) -> Bool {
        synced.contains { $0.entry == entry && $0.direction.receives }
    }

    // MARK: Matching

    /// Whether a notification named `name` goes to the other device: a route names it or a prefix of it, and
    /// no retained route names it (a retained name crosses as its latest only).
    private func sends(notification name: String) -> Bool {
        if all.contains(where: { if case .retained(name) = $0.kind { true } else { false } }) { return false }
        return all.contains { route in
            guard route.direction.sends else { return false }
            switch route.kind {
            case .notifications(let named): return named == name
            case .notificationsPrefixed(let prefix):
                return name.hasPrefix(prefix) && (!name.hasPrefix(Self.reservedPrefix) || prefix.hasPrefix(Self.reservedPrefix))
            case .requests(let named): return name == GroupNotificationCenter.requestName(for: named)
            case .retained, .value: return false
            }
        }
    }

    /// Whether `name` is a request this side carries to the other.
    private func sends(request name: String) -> Bool {
        all.contains { route in
            guard route.direction.sends, case .requests(let named) = route.kind else { return false }
            return name == GroupNotificationCenter.requestName(for: named)
        }
    }

    /// Whether `name` is a request from the other side that this side posts.
    private func receives(request name: String) -> Bool {
        all.contains { route in
            guard route.direction.receives, case .requests(let named) = route.kind else { return false }
            return name == GroupNotificationCenter.requestName(for: named)
        }
    }

    /// Whether this side's requests cross, so that replies come back.
    private var sendsRequests: Bool {
        all.contains { route in
            if case .requests = route.kind { route.direction.sends } else { false }
        }
    }

    /// Whether a notification named `name` from the other device is posted here. A prefix takes a reserved name
    /// (a request's, a reply's) only when it is itself reserved, as on the sending side: the other side never
    /// sends one otherwise, so one that comes is forged.
    private func receives(notification name: String) -> Bool {
        all.contains { route in
            guard route.direction.receives else { return false }
            switch route.kind {
            case .notifications(let named): return named == name
            case .notificationsPrefixed(let prefix):
                return name.hasPrefix(prefix) && (!name.hasPrefix(Self.reservedPrefix) || prefix.hasPrefix(Self.reservedPrefix))
            case .requests(let named): return name == GroupNotificationCenter.requestName(for: named)
            case .retained, .value: return false
            }
        }
    }

    static var reservedPrefix: String { "wormhole." }
}
