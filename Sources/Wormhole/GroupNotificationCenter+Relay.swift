import Foundation
import WormholeEngine

/// A notification as a relay handles it: which post it was, and its userInfo's archive undecoded, so that it
/// crosses to another device as it was posted and each observer there decodes it with its own classes.
package struct RelayedNotification: Sendable, Hashable {
    package var poster: UInt64
    package var sequence: UInt64
    package var name: String
    package var object: String?
    /// The userInfo's archive; nil for none.
    package var userInfo: [UInt8]?

    package init(poster: UInt64, sequence: UInt64, name: String, object: String?, userInfo: [UInt8]?) {
        self.poster = poster
        self.sequence = sequence
        self.name = name
        self.object = object
        self.userInfo = userInfo
    }

    init(_ frame: Frame) {
        self.init(
            poster: frame.poster, sequence: frame.sequence, name: frame.name, object: frame.object,
            userInfo: frame.userInfo.map { $0.withBytes { [UInt8]($0) } })
    }

    /// Whether a relay posted it (``RelayMark``): what a relay never sends back.
    package var isRelayed: Bool { RelayMark.isRelayed(poster) }
}

/// A group value's newest version as a relay reads it.
package struct RelayedValue: Sendable {
    /// The newest version's number, whole or not: a new one is claimed past it.
    package var newest: UInt64
    /// The newest whole version's number; 0 when the value is its default.
    package var version: UInt64
    /// Its userInfo archive; nil for the default.
    package var archive: [UInt8]?
    /// Whether a relay wrote it.
    package var isRelayed: Bool
}

/// What a relay needs of a center that is not public: its posts marked, frames as they came, and the stores
/// read and written as archives.
extension GroupNotificationCenter {
    /// A durable center whose posts carry the relay's mark. Until its observers are added, its registry entry
    /// keeps the subscriptions of its identity's last run, so posters go on spooling for it.
    package convenience init(relayContainerURL containerURL: URL, clientIdentifier: String) throws {
        var configuration = Configuration()
        configuration.marksPostsAsRelayed = true
        try self.init(containerURL: containerURL, clientIdentifier: clientIdentifier, configuration: configuration)
    }

    /// This center's container folder, open anew by descriptor: where a relay keeps its files, in folders it
    /// opens beneath it without following links (``ContainerFolder``). The folder this center opened, even when
    /// its path names another one now.
    package func containerFolder() throws(WormholeError) -> ContainerFolder {
        try ContainerFolder(of: endpoint.container)
    }

    /// A relay's observer: its name, and its block, which gets each notification as it came (its poster,
    /// sequence and undecoded userInfo), on the receive thread.
    package typealias RelayObserver = (name: String?, block: @Sendable (RelayedNotification) -> Void)

    /// Adds a relay's observers together, with the mark that has every process spool what it posts for this
    /// center (``ReservedNames/keepsSpooled``): a relay killed before it kept a notification gets it again from
    /// its spool when it restarts, where what waited in its socket would be lost. Posters see them all in one
    /// change of the registry: one added alone would, for a moment, leave the others' names out of an entry that
    /// held them since the last run, and what was posted under them then would not be sent to this center.
    /// Returns their tokens, the mark's first when it is added. Names reserved for requests and replies are seen
    /// only when named.
    package func addRelayObservers(_ list: [RelayObserver], keepingSpooled: Bool = true) -> [any NSObjectProtocol] {
        let ignore: @Sendable (RelayedNotification) -> Void = { _ in }
        let mark: [RelayObserver] = keepingSpooled ? [(ReservedNames.keepsSpooled, ignore)] : []
        let observers = (mark + list).map { observer in
            let block = observer.block
            return Observer(
                id: endpoint.makeObserverID(), center: ObjectIdentifier(self), subscription: Subscription(name: observer.name, object: nil)
            ) { frame in
                block(RelayedNotification(frame))
            }
        }
        endpoint.add(observers)
        return observers
    }

    /// Removes a relay's observers, and keeps their names in its registry entry: posters go on spooling for the
    /// relay, which gets what they post when its observers are added again.
    package func removeRelayObservers(_ tokens: [any NSObjectProtocol]) {
        let observers = tokens.compactMap { $0 as? Observer }
        endpoint.remove(publish: false) { candidate in observers.contains { $0 === candidate } }
    }

    /// Adds one relay observer, without the mark (``addRelayObservers(_:keepingSpooled:)``): for what a relay
    /// takes besides its routes (the replies to requests it carried).
    package func addRelayObserver(
        forName name: String?, using block: @escaping @Sendable (RelayedNotification) -> Void
    ) -> any NSObjectProtocol {
        addRelayObservers([(name, block)], keepingSpooled: false)[0]
    }

    /// Posts what a relay received from another device into this group, with this center's mark; with
    /// `retain`, also as its name's retained value.
    /// - Throws: As ``postReporting(name:object:userInfo:)`` for the name and object;
    ///   ``WormholeError/Code/payloadTooLarge`` for an archive above ``maximumPayloadSize``.
    ///
    /// With `stablePoster` and `sequence`, the post goes as that poster's (made a relay's, ``RelayMark``) with
    /// that sequence: posted again with the same after a kill, listeners drop the copy. A relay's sequences for
    /// one such poster must grow from post to post.
    @discardableResult
    package func postRelayed(
        name: String, object: String?, userInfo: [UInt8]?, retain: Bool, stablePoster: UInt64? = nil, sequence: UInt64 = 0
    ) throws -> PostReport {
        if ReservedNames.isReserved(name) {
            // What a relay carries of requests and replies: their names, never the spool mark.
            guard name.hasPrefix(ReservedNames.requestPrefix) || ReservedNames.isReplyName(name),
                name.utf8.count <= Self.maximumNameLength, (object?.utf8.count ?? 0) <= Self.maximumNameLength
            else { throw WormholeError(.invalidNotification, "notification name \(name) is reserved") }
        } else {
            _ = try checkedArchive(name: Notification.Name(name), object: object, userInfo: nil)
        }
        if let userInfo, userInfo.count > Self.maximumPayloadSize {
            throw WormholeError(.payloadTooLarge, "userInfo of \(name) is \(userInfo.count) bytes, over the \(Self.maximumPayloadSize)-byte maximum")
        }
        let identity = stablePoster.map { FrameIdentity(poster: RelayMark.stablePoster($0), sequence: sequence) }
        return try endpoint.post(name: name, object: object, userInfo: userInfo, retain: retain, as: identity)
    }

    /// The retained notification of `name` as it is stored, or nil when there is none.
    package func retainedRelayedNotification(named name: String) -> RelayedNotification? {
        endpoint.retained.load(name: name).map(RelayedNotification.init)
    }

    /// The name of the notification that announces each change of the group value `name`.
    package static func valueNotificationName(for name: String) -> String { GroupValueName.notification(for: name) }

    /// The newest version of the group value `name`.
    package func relayedValue(named name: String) throws -> RelayedValue {
        let reading = try ValueVersions(name, in: endpoint).latest()
        return RelayedValue(
            newest: reading.newest, version: reading.version, archive: reading.archive.map { $0.withBytes { [UInt8]($0) } },
            isRelayed: RelayMark.isRelayed(reading.poster))
    }

    /// Writes `archive` (a group value's userInfo from another device; nil for the default) as the version after
    /// `newest`, with its `"version"` set to that version, and announces it. Returns the version written, or nil
    /// when another process took it first (read again and decide again).
    /// - Throws: ``WormholeError/Code/corruptData`` when `archive` is not a group value's; a system error when
    ///   the container cannot be written.
    package func publishRelayedValue(named name: String, archive: [UInt8]?, after newest: UInt64) throws -> UInt64? {
        let versions = ValueVersions(name, in: endpoint)
        let version = try ValueVersions.successor(of: newest)
        var stored: [UInt8]? = nil
        if let archive {
            var userInfo = try UserInfoCodec.decode(ArchiveBytes(archive), allowed: AllowedClasses.groupValue)
            guard userInfo[ValueFormat.valueKey] != nil else {
                throw WormholeError(.corruptData, "value \(name) from the other device holds no \"\(ValueFormat.valueKey)\"")
            }
            userInfo[ValueFormat.versionKey] = Int(truncatingIfNeeded: version)
            stored = try UserInfoCodec.encode(userInfo, maximumSize: Self.maximumPayloadSize)
        }
        return try versions.publish(stored, version: version) {} ? version : nil
    }

    // MARK: Requests

    /// The name a request for `name` travels under.
    package static func requestName(for name: String) -> String { ReservedNames.request(name) }

    /// The name a request travels under stands for, or nil when `name` is not a request's.
    package static func requestedName(of name: String) -> String? {
        name.hasPrefix(ReservedNames.requestPrefix) ? String(name.dropFirst(ReservedNames.requestPrefix.count)) : nil
    }

    /// What the responders of this container answer, as the registry says: the name (without the request
    /// prefix) and sender tag of each responder of every listener, running or durable, but relays and bridges
    /// (which answer for requests they carry elsewhere, and never carry on what another of them posted). A
    /// bridge reads it to learn which requests from other hosts this one answers.
    package func responders() -> Set<RequestRoute> {
        var found = Set<RequestRoute>()
        for entry in endpoint.registryEntries() where !entry.keepsSpooled {
            for subscription in entry.subscriptions {
                guard let name = subscription.name.flatMap(Self.requestedName(of:)) else { continue }
                found.insert(RequestRoute(name: name, object: subscription.object))
            }
        }
        return found
    }

    /// A responder's name and sender tag (nil: every sender), as ``responders()`` finds it.
    package struct RequestRoute: Hashable, Sendable {
        package var name: String
        package var object: String?

        package init(name: String, object: String?) {
            self.name = name
            self.object = object
        }
    }

    /// Whether a listener answers a request for `name` from `object`, as the registry says now; relays and
    /// bridges left out, as in ``responders()``.
    package func hasResponder(forName name: String, object: String?) -> Bool {
        let requestName = ReservedNames.request(name)
        return endpoint.registryEntries().contains { entry in
            !entry.keepsSpooled && entry.subscriptions.contains { $0.matches(name: requestName, object: object) }
        }
    }

    /// A request's id, where its replies go, and the nanoseconds it has left now; nil when `archive` is not a
    /// whole request's, or holds classes beyond the value classes.
    package static func requestAddress(_ archive: [UInt8]) -> (id: String, replyTo: String, remaining: Int64)? {
        guard let userInfo = try? UserInfoCodec.decode(ArchiveBytes(archive), allowed: AllowedClasses.values),
            let envelope = RequestEnvelope(userInfo)
        else { return nil }
        return (envelope.id, envelope.replyTo, envelope.remaining(at: uptimeNanoseconds))
    }

    /// The userInfo archive of a reply that says nobody answers where the request went: a requester's request
    /// fails with ``WormholeError/Code/noResponder`` once every listener it reached sent one.
    package static func noResponderReply() throws -> [UInt8] {
        try UserInfoCodec.encode([RequestEnvelope.noResponderKey: true], maximumSize: maximumPayloadSize)
    }

    /// Whether `name` is a reply's.
    package static func isReplyName(_ name: String) -> Bool { ReservedNames.isReplyName(name) }

    /// This device's monotonic clock, in nanoseconds: what requests' time left is measured on.
    package static var uptimeNanoseconds: Int64 { Int64(clamping: Sys.uptimeNanoseconds) }

    /// Where a request's replies go, and the nanoseconds it has left now; nil when `archive` is not a whole
    /// request's, or holds classes beyond the value classes (a relay cannot carry it then).
    package static func requestTimeLeft(_ archive: [UInt8]) -> (replyTo: String, remaining: Int64)? {
        guard let userInfo = try? UserInfoCodec.decode(ArchiveBytes(archive), allowed: AllowedClasses.values),
            let envelope = RequestEnvelope(userInfo)
        else { return nil }
        return (envelope.replyTo, envelope.remaining(at: uptimeNanoseconds))
    }

    /// A request's archive from another device with `remaining` nanoseconds left from now, on this device's
    /// clock: time travels as time left, stamped anew on each device.
    /// - Throws: ``WormholeError/Code/corruptData`` when `archive` is not a whole request's.
    package static func restampedRequest(_ archive: [UInt8], remaining: Int64) throws -> [UInt8] {
        var userInfo = try UserInfoCodec.decode(ArchiveBytes(archive), allowed: AllowedClasses.values)
        guard let envelope = RequestEnvelope(userInfo) else {
            throw WormholeError(.corruptData, "a request from the other device does not say where to reply")
        }
        userInfo[RequestEnvelope.key] = RequestEnvelope(
            id: envelope.id, replyTo: envelope.replyTo, remaining: remaining, stamp: uptimeNanoseconds
        ).fields
        return try UserInfoCodec.encode(userInfo, maximumSize: maximumPayloadSize)
    }
}
