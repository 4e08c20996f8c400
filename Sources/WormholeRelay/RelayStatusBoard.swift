import Synchronization

/// What a relay shows of itself: the counts and last failure of ``RelayStatus``, which every part of the relay
/// adds to, and the streams that follow them (``WormholeRelay/statuses()``).
final class RelayStatusBoard: Sendable {
    private let published = Mutex(RelayStatus())
    private let watchers = Mutex<[UInt64: AsyncStream<RelayStatus>.Continuation]>([:])

    /// Changes the status, and hands the new one to each stream.
    func count(_ change: (inout RelayStatus) -> Void) {
        let status = published.withLock { status in
            change(&status)
            return status
        }
        for continuation in watchers.withLock({ Array($0.values) }) { continuation.yield(status) }
    }

    /// Counts a failure the link reported (or one met in its place), and logs it.
    func record(_ error: RelayLinkError) {
        count {
            $0.errors[error.code, default: 0] += 1
            $0.lastError = error
        }
        RelayLog.write("link: \(error)")
    }

    /// The link status last counted.
    var link: RelayLinkStatus { published.withLock { $0.link } }

    /// The status, with the link's as it is now.
    func status(link: RelayLinkStatus) -> RelayStatus {
        var status = published.withLock { $0 }
        status.link = link
        return status
    }

    /// A stream of the status: `first`, then each change; the newest only for a reader that falls behind.
    func statuses(first: RelayStatus) -> AsyncStream<RelayStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: RelayStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = UInt64.random(in: 1...UInt64.max)
        continuation.yield(first)
        watchers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.watchers.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    /// Ends every stream: the relay closed.
    func finish() {
        watchers.withLock { watchers in
            for continuation in watchers.values { continuation.finish() }
            watchers = [:]
        }
    }
}
