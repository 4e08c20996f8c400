#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Errors of other platforms, made to happen here. In a debug build, `WORMHOLE_INJECT_SEND=ENOBUFS/3` makes every
/// third send of a socket fail with `ENOBUFS`, as a full datagram socket does on Darwin and never on Linux, so
/// that tests run the handling of errno values this machine does not return; `WORMHOLE_INJECT_MEMORY_FILE=1`
/// makes every `memfd_create` fail with `EMFILE`, so that large frames take the spool as they do where there is
/// no memory file; `WORMHOLE_INJECT_ALLOCATE=1` makes `Sys.allocate` find no memory. Release builds compile it
/// to nothing.
package enum InjectedFault {
    #if DEBUG
    /// An errno and a count, from `NAME/COUNT` in the environment variable `variable`.
    private static func failure(_ variable: String) -> (errno: CInt, every: Int)? {
        guard let text = ProcessInfo.processInfo.environment[variable] else { return nil }
        let parts = text.split(separator: "/")
        let names: [Substring: CInt] = [
            "ENOBUFS": ENOBUFS, "EAGAIN": EAGAIN, "EMSGSIZE": EMSGSIZE, "ECONNRESET": ECONNRESET,
            "EDESTADDRREQ": EDESTADDRREQ, "EPROTOTYPE": EPROTOTYPE, "EINVAL": EINVAL, "ENOMEM": ENOMEM,
            "EMFILE": EMFILE,
        ]
        guard let name = parts.first, let value = names[name] else { return nil }
        let every = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        return (value, max(1, every))
    }
    private static let sendFailure = failure("WORMHOLE_INJECT_SEND")
    private static let sends = Atomic<Int>(0)
    private static let boundSocketFailure = failure("WORMHOLE_INJECT_RECEIVE")
    private static let rebinds = Atomic<Int>(0)
    private static let pollFailure = failure("WORMHOLE_INJECT_POLL")
    private static let polls = Atomic<Int>(0)
    private static let memoryFilesFail = ProcessInfo.processInfo.environment["WORMHOLE_INJECT_MEMORY_FILE"] == "1"
    private static let allocationsFail = ProcessInfo.processInfo.environment["WORMHOLE_INJECT_ALLOCATE"] == "1"
    private static let segmentOpenFailure = failure("WORMHOLE_INJECT_SEGMENT_OPEN")
    private static let segmentOpens = Atomic<Int>(0)
    #endif

    /// The send buffer to ask for instead of the usual (`WORMHOLE_INJECT_SEND_BUFFER=BYTES`): as if the system
    /// granted less than asked.
    static var sendBufferAsk: CInt? {
        #if DEBUG
        return sendBuffer
        #else
        return nil
        #endif
    }
    #if DEBUG
    private static let sendBuffer = ProcessInfo.processInfo.environment["WORMHOLE_INJECT_SEND_BUFFER"].flatMap { CInt($0) }
    #endif

    /// Throws the injected error for a read (datagrams) or an accept (sequenced packets) of the socket posters
    /// reach, as a socket gone bad does, while fewer than K rebinds happened (`WORMHOLE_INJECT_RECEIVE=EINVAL/K`):
    /// what was sent to it stays there, so that a poll keeps finding it ready.
    @inline(__always)
    package static func failBoundSocket() throws(WormholeError) {
        #if DEBUG
        guard let failure = boundSocketFailure, rebinds.load(ordering: .relaxed) < failure.every else { return }
        throw WormholeError(.system, "receive (injected)", errno: failure.errno)
        #endif
    }

    /// Counts a rebind of a listener's socket, which ends an injected receive failure after K of them.
    package static func rebound() {
        #if DEBUG
        rebinds.add(1, ordering: .relaxed)
        #endif
    }

    /// Throws the injected error for each of the first K opens of a spool segment to read it
    /// (`WORMHOLE_INJECT_SEGMENT_OPEN=EMFILE/K`), as a process that ran out of descriptors between listing its
    /// spool and opening a segment sees.
    @inline(__always)
    package static func failSegmentOpen() throws(WormholeError) {
        #if DEBUG
        guard let failure = segmentOpenFailure, segmentOpens.add(1, ordering: .relaxed).newValue <= failure.every else { return }
        throw WormholeError(.system, "open (injected)", errno: failure.errno)
        #endif
    }

    /// Throws the injected error for each of the first K waits (`WORMHOLE_INJECT_POLL=ENOMEM/K`).
    @inline(__always)
    package static func failPoll() throws(WormholeError) {
        #if DEBUG
        guard let failure = pollFailure, polls.add(1, ordering: .relaxed).newValue <= failure.every else { return }
        throw WormholeError(.system, "poll (injected)", errno: failure.errno)
        #endif
    }

    /// Whether this process takes the paths Apple platforms take (`WORMHOLE_APPLE_PATHS=1`): one message per
    /// receive (`recvmsg(2)`, no `recvmmsg(2)`), and no memory files (large frames through the spool). Honoured
    /// in release builds too, for the benchmark: it only chooses the portable way of doing the same thing.
    static let takesApplePaths = ProcessInfo.processInfo.environment["WORMHOLE_APPLE_PATHS"] == "1"

    /// Throws `EMFILE` for every memory file, when injected.
    @inline(__always)
    static func failMemoryFile() throws(WormholeError) {
        #if DEBUG
        if memoryFilesFail { throw WormholeError(.system, "memfd_create (injected)", errno: EMFILE) }
        #endif
    }

    /// Whether ``Sys/allocate(_:)`` is to find no memory (`WORMHOLE_INJECT_ALLOCATE=1`), so that tests run what
    /// its callers do then.
    @inline(__always)
    static var allocationFails: Bool {
        #if DEBUG
        return allocationsFail
        #else
        return false
        #endif
    }

    /// Throws the injected error on every n-th call.
    @inline(__always)
    static func failSend() throws(WormholeError) {
        #if DEBUG
        guard let failure = sendFailure else { return }
        guard sends.add(1, ordering: .relaxed).newValue % failure.every == 0 else { return }
        throw WormholeError(.system, "send (injected)", errno: failure.errno)
        #endif
    }
}
