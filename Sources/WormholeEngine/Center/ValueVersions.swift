import Synchronization

/// A group value's versions in its container, as the center keeps them (``ValueStore``): the newest whole one
/// read, with the versions skipped as damaged counted and said once each; a new one written as a frame of this
/// process's and announced to the value's observers. ``GroupValue`` turns what they hold into values.
package final class ValueVersions: Sendable {
    /// What a reading found: the newest version's number (the next is claimed past it, whole or not), and the
    /// newest whole version's number and userInfo archive (0 and nil for the default).
    package struct Reading {
        package var newest: UInt64
        package var version: UInt64
        package var archive: ArchiveBytes?
        /// Who wrote the newest whole version (0 for none).
        package var poster: UInt64 = 0
        /// Why the value could not be read, when no version near the newest is whole but some are damaged: the
        /// newest damaged one's reason. Nil when a whole version was found, and when the value has no version.
        package var damage: String? = nil
    }

    let name: String
    private let endpoint: Endpoint
    private let store: ValueStore
    /// The newest damaged version said, so that each is said once.
    private let reportedDamage = Mutex<UInt64>(0)

    package init(_ name: String, in endpoint: Endpoint) {
        self.name = name
        self.endpoint = endpoint
        store = ValueStore(container: endpoint.container, name: name)
    }

    /// The name of the notification that announces a change of the value `name`.
    package static func notification(for name: String) -> String { GroupValueName.notification(for: name) }

    var notification: String { Self.notification(for: name) }

    /// The version to claim after `newest`.
    /// - Throws: ``WormholeError/Code/corruptData`` when planted names reach the end of the versions' range.
    package static func successor(of newest: UInt64) throws(WormholeError) -> UInt64 {
        try ValueStore.successor(of: newest)
    }

    /// The newest whole version; versions it skipped as damaged are counted and logged, once each.
    package func latest() throws(WormholeError) -> Reading {
        let reading = try store.latest()
        if let newest = reading.damaged.first {
            let first = reportedDamage.withLock { reported in
                guard reported != newest.version else { return false }
                reported = newest.version
                return true
            }
            if first {
                endpoint.counters.count { $0.dropped += reading.damaged.count }
                for (version, reason) in reading.damaged {
                    Log.warning("value \(name): version \(version) skipped, newer versions claim past it: \(reason)")
                }
            }
        }
        return Reading(
            newest: reading.newest, version: reading.version, archive: reading.frame?.userInfo, poster: reading.frame?.poster ?? 0,
            damage: reading.frame == nil ? reading.damaged.first?.reason : nil)
    }

    /// Writes `archive` (nil: the default) as `version`, calls `written`, then announces the change; false when
    /// another process took that version first. An announcement that fails is logged: watchers find the version
    /// within a second anyway.
    package func publish(_ archive: [UInt8]?, version: UInt64, written: () -> Void) throws(WormholeError) -> Bool {
        let frame = Frame(poster: endpoint.poster, sequence: version, name: notification, object: nil, userInfo: archive)
        StopPoint.reached("value.publish")
        guard try store.publish(frame.encoded(), version: version) else { return false }
        written()
        do {
            _ = try endpoint.post(name: notification, object: nil, userInfo: archive ?? (try UserInfoCodec.encode(
                [ValueFormat.versionKey: Int(truncatingIfNeeded: version)], maximumSize: Limits.maximumPayloadSize)))
        } catch {
            Log.warning("change of value \(name) not announced: \(error)")
        }
        return true
    }
}
