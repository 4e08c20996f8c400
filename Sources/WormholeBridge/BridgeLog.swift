import Foundation

/// Where the bridge says what it does and what went wrong: the standard error, one line each.
enum BridgeLog {
    static func write(_ message: String) {
        FileHandle.standardError.write(Data("[Wormhole bridge] \(message)\n".utf8))
    }
}
