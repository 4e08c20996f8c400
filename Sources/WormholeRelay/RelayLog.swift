import Foundation

/// The relay's log: one line on standard error for each thing it could not do or chose not to.
enum RelayLog {
    static func write(_ message: String) {
        FileHandle.standardError.write(Data("[Wormhole relay] \(message)\n".utf8))
    }
}
