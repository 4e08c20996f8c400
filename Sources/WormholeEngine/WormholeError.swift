import Foundation

/// An error reported by Wormhole: what went wrong, where, and the system's errno when the system said no.
///
/// Codes can grow between releases; switch over them with a `default` case.
public struct WormholeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Storage: Hashable, Sendable {
            case invalidContainer, insecureContainer, invalidNotification, unsupportedValue
            case payloadTooLarge, spoolFull, tooManyListeners, corruptData, disallowedClass, system, identityInUse
            case incompatibleContainer, noResponder, timedOut, responderFailed
        }
        let storage: Storage

        /// The container is missing, not a directory, or its path cannot be used.
        public static let invalidContainer = Code(storage: .invalidContainer)
        /// The container is owned by another user or writable by group or others.
        public static let insecureContainer = Code(storage: .insecureContainer)
        /// The notification itself is unusable: an empty name, or an object that is not a `String`.
        public static let invalidNotification = Code(storage: .invalidNotification)
        /// A userInfo value is neither a property-list value nor `NSSecureCoding`.
        public static let unsupportedValue = Code(storage: .unsupportedValue)
        /// The encoded notification is larger than ``GroupNotificationCenter/maximumPayloadSize``.
        public static let payloadTooLarge = Code(storage: .payloadTooLarge)
        /// A listener's spool already holds its limit, or the container's spools together hold theirs
        /// (``GroupNotificationCenter/Configuration``).
        public static let spoolFull = Code(storage: .spoolFull)
        /// The container already has ``GroupNotificationCenter/maximumListeners`` listening processes.
        public static let tooManyListeners = Code(storage: .tooManyListeners)
        /// Bytes read from a socket, spool, registry or archive are malformed.
        public static let corruptData = Code(storage: .corruptData)
        /// An archive holds a class outside the observer's allowed classes.
        public static let disallowedClass = Code(storage: .disallowedClass)
        /// Another live process already runs a center with this client identifier on this container.
        public static let identityInUse = Code(storage: .identityInUse)
        /// The container was made by a Wormhole of another on-disk layout, or was moved or recreated after this
        /// process opened it.
        public static let incompatibleContainer = Code(storage: .incompatibleContainer)
        /// A system call failed; ``WormholeError/errno`` says why.
        public static let system = Code(storage: .system)
        /// A request found no process, running or durable, with a responder for its name.
        public static let noResponder = Code(storage: .noResponder)
        /// A request got no reply before its timeout.
        public static let timedOut = Code(storage: .timedOut)
        /// The responder that answered a request threw an error, or its reply is not of the type the request
        /// expects: the detail says which.
        public static let responderFailed = Code(storage: .responderFailed)

        /// The code in words, e.g. `spool full`.
        public var description: String {
            switch storage {
            case .invalidContainer: "invalid container"
            case .insecureContainer: "insecure container"
            case .invalidNotification: "invalid notification"
            case .unsupportedValue: "unsupported value"
            case .payloadTooLarge: "payload too large"
            case .spoolFull: "spool full"
            case .tooManyListeners: "too many listeners"
            case .corruptData: "corrupt data"
            case .disallowedClass: "disallowed class"
            case .system: "system error"
            case .identityInUse: "identity in use"
            case .incompatibleContainer: "incompatible container"
            case .noResponder: "no responder"
            case .timedOut: "timed out"
            case .responderFailed: "responder failed"
            }
        }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The errno the system reported, when a system call failed.
    public let errno: Int32?
    /// What failed and where, e.g. `container /x is writable by group`.
    public let detail: String

    /// An error of `code`.
    /// - Parameters:
    ///   - code: What kind of failure this is.
    ///   - detail: What failed and where.
    ///   - errno: The errno a failed system call reported, or nil.
    public init(_ code: Code, _ detail: String, errno: Int32? = nil) {
        self.code = code
        self.detail = detail
        self.errno = errno
    }

    /// The code, the detail and, for a system error, the system's message and errno:
    /// `system error: open /x/layout: Permission denied (errno 13)`.
    public var description: String {
        guard let errno else { return "\(code): \(detail)" }
        return "\(code): \(detail): \(Errno(errno).message) (errno \(errno))"
    }
}

extension WormholeError: CustomNSError {
    /// The domain of an `NSError` made from this error: the library's, whichever of its modules holds the type,
    /// so that an app that logs or compares it sees the same string in every release.
    public static var errorDomain: String { "Wormhole.WormholeError" }
}
