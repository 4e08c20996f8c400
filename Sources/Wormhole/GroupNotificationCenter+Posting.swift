import Foundation
import WormholeEngine

extension GroupNotificationCenter {
    /// Posts a notification to every observer of `name` in every process of the group, this one included.
    ///
    /// Returns once the notification sits in each matching listener's socket or spool, so the process may exit
    /// at once. Never waits for a receiver. Errors are logged; ``postReporting(name:object:userInfo:)`` throws
    /// them instead.
    /// - Parameters:
    ///   - name: The notification's name; must not be empty.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - userInfo: Property-list values (String, numbers, Bool, Date, Data, arrays, dictionaries) or
    ///     `NSSecureCoding` objects, archived with secure coding.
    public func post(name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil) {
        loggingFailure("notification \(name.rawValue)") { try postReporting(name: name, object: object, userInfo: userInfo) }
    }

    /// Runs a reporting post and logs its error instead of throwing it: what each post that does not report does.
    func loggingFailure(_ what: @autoclosure () -> String, of post: () throws -> PostReport) {
        do {
            _ = try post()
        } catch {
            Log.warning("\(what()) not posted: \(error)")
        }
    }

    /// Posts `notification`, whose object must be a `String` or nil.
    ///
    /// A notification with another kind of object is not posted, and a warning is logged.
    /// - Parameter notification: Its name, object and userInfo are posted as by ``post(name:object:userInfo:)``.
    public func post(_ notification: Notification) {
        if let object = notification.object, !(object is String) {
            Log.warning("notification \(notification.name.rawValue) not posted: its object is a \(type(of: object)), not a String")
            return
        }
        post(name: notification.name, object: notification.object as? String, userInfo: notification.userInfo)
    }

    /// Posts like ``post(name:object:userInfo:)`` and reports what happened to each listener.
    ///
    /// - Parameters:
    ///   - name: The notification's name; must not be empty.
    ///   - object: A sender tag observers can filter on, or nil.
    ///   - userInfo: Property-list values or `NSSecureCoding` objects, archived with secure coding.
    /// - Returns: How many listeners got it directly, how many will read it from their spool, and which
    ///   failed (for example ``WormholeError/Code/spoolFull``). A dead listener found on the way is removed
    ///   from the registry and counted, not reported as a failure.
    /// - Throws: Before anyone is contacted: ``WormholeError/Code/invalidNotification`` for an empty or too
    ///   long name or object, or a name starting with `wormhole.request.` or `wormhole.reply.` (reserved for
    ///   ``request(name:object:userInfo:timeout:)``), ``WormholeError/Code/unsupportedValue`` for a userInfo
    ///   value that cannot be securely archived, ``WormholeError/Code/payloadTooLarge`` above
    ///   ``maximumPayloadSize``.
    @discardableResult
    public func postReporting(name: Notification.Name, object: String?, userInfo: [AnyHashable: Any]? = nil)
        throws -> PostReport
    {
        let archive = try checkedArchive(name: name, object: object, userInfo: userInfo)
        return try endpoint.post(name: name.rawValue, object: object, userInfo: archive)
    }

    /// Checks a notification and archives its userInfo, before anyone is contacted.
    func checkedArchive(name notificationName: Notification.Name, object: String?, userInfo: [AnyHashable: Any]?)
        throws(WormholeError) -> [UInt8]?
    {
        let name = notificationName.rawValue
        guard !name.isEmpty else {
            throw WormholeError(.invalidNotification, "notification name is empty")
        }
        guard name.utf8.count <= Self.maximumNameLength, (object?.utf8.count ?? 0) <= Self.maximumNameLength else {
            throw WormholeError(.invalidNotification, "notification name or object is longer than \(Self.maximumNameLength) bytes")
        }
        guard !ReservedNames.isReserved(name) else {
            throw WormholeError(
                .invalidNotification,
                "notification name \(name) is reserved: names starting with \(ReservedNames.requestPrefix) or \(ReservedNames.replyPrefix) carry requests and replies")
        }
        guard let userInfo else { return nil }
        let encoded = try UserInfoCodec.encode(userInfo, maximumSize: Self.maximumPayloadSize)
        guard encoded.count <= Self.maximumPayloadSize else {
            throw WormholeError(
                .payloadTooLarge,
                "userInfo of \(name) archives to \(encoded.count) bytes, over the \(Self.maximumPayloadSize)-byte maximum")
        }
        return encoded
    }
}
