#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Where Wormhole's warnings go: standard error unless the application installs a handler. The package's other
/// library (WormholeUI) says its warnings here too, so that one handler receives them all.
package enum Log {
    private static let handler = Mutex<(@Sendable (String) -> Void)?>(nil)

    package static func setHandler(_ newHandler: (@Sendable (String) -> Void)?) {
        handler.withLock { $0 = newHandler }
    }

    package static func warning(_ message: String) {
        let message = Escaping.forDisplay(message)
        if let installed = handler.withLock({ $0 }) {
            installed(message)
            return
        }
        let line = "wormhole[\(getpid())]: warning: \(message)\n"
        _ = line.utf8CString.withUnsafeBytes { raw in
            write(2, raw.baseAddress, raw.count - 1)
        }
    }
}
