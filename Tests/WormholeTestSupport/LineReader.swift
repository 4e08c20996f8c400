import Foundation

/// Reads `handle` on a thread of its own until it ends, handing over each whole line as it comes, then calling
/// `onEnd`.
public func readLines(
    from handle: FileHandle, onEnd: @escaping @Sendable () -> Void = {}, _ onLine: @escaping @Sendable (String) -> Void
) {
    Thread {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                onLine(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        onEnd()
    }.start()
}
