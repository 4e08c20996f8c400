#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Descriptors to wait on for input (`poll(2)`), in the order added, and what the last wait found on each.
package struct PollSet: RandomAccessCollection {
    /// One descriptor of the set, and what the last wait found on it.
    package struct Entry {
        /// The descriptor; nil for a place kept that is not polled.
        package let fd: Descriptor?
        fileprivate let revents: Int16

        /// Whether the wait found anything on it: input, an error, or its end.
        package var isReady: Bool { revents != 0 }
        /// Whether the wait reported an error on it (`POLLERR`, `POLLNVAL`).
        package var hasFailed: Bool { revents & Int16(POLLERR | POLLNVAL) != 0 }
    }

    private var events: [pollfd] = []
    /// What its maker says the set holds (``Inbox/pollShape``); nil when it says nothing. Set again by whoever
    /// adds or removes descriptors; a set whose shape is as wanted is polled again as it is.
    package var shape: UInt64?

    package init() {}

    package var startIndex: Int { 0 }
    package var endIndex: Int { events.count }
    package subscript(position: Int) -> Entry {
        let fd = events[position].fd
        return Entry(fd: fd < 0 ? nil : Descriptor(rawValue: fd), revents: events[position].revents)
    }

    /// Adds `fd`, or with nil a place that a wait passes over (a socket that failed keeps its place).
    package mutating func add(_ fd: Descriptor?) {
        events.append(pollfd(fd: fd?.rawValue ?? -1, events: Int16(POLLIN), revents: 0))
    }

    package mutating func removeAll() {
        events.removeAll(keepingCapacity: true)
        shape = nil
    }

    /// Waits at most `timeoutMilliseconds` (0: looks without waiting) for input on any descriptor; returns how
    /// many have something.
    package mutating func wait(timeoutMilliseconds: CInt) throws(WormholeError) -> Int {
        let count = events.count
        return Int(try events.withUnsafeMutableBufferPointer { (buffer) throws(WormholeError) -> CInt in
            try valueOrErrno("poll") { poll(buffer.baseAddress, nfds_t(count), timeoutMilliseconds) }
        })
    }
}
