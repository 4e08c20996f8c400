import Foundation

/// Reads `handle` on a thread of its own until it ends, handing over each whole line as it comes, then calling
/// `onEnd`.
public func readLines(
    from handle: FileHandle, onEnd: @escaping @Sendable () -> Void = {}, _ onLine: @escaping @Sendable (String) -> Void
) {
    Thread {
        var pending = Data()
        // How many bytes at the start of `pending` are known to hold no newline: each byte is looked at once, so
        // that a line of megabytes, which comes a pipe's worth at a time, is not searched again for each.
        var searched = 0
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = newlineOffset(in: pending, from: searched) {
                onLine(String(decoding: pending.prefix(newline), as: UTF8.self))
                pending.removeSubrange(pending.startIndex...(pending.startIndex + newline))
                searched = 0
            }
            searched = pending.count
        }
        onEnd()
    }.start()
}

/// Where the first newline of `data` at or after `offset` is, counted from its start; nil when there is none.
private func newlineOffset(in data: Data, from offset: Int) -> Int? {
    data.withUnsafeBytes { raw -> Int? in
        guard offset < raw.count, let base = raw.baseAddress else { return nil }
        guard let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), raw.count - offset) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
