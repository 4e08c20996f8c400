#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the system says of another process, for `wormhole status`.
enum ProcessState: String, Sendable {
    case running, stopped, gone, unknown

    /// Reads the state of `pid`: on Linux from `/proc/<pid>/stat`, elsewhere only whether it exists.
    static func of(_ pid: Int32) -> ProcessState {
        guard pid > 0 else { return .unknown }
        #if os(Linux)
        guard let stat = try? readSmallFile("/proc/\(pid)/stat") else { return kill(pid, 0) == 0 ? .unknown : .gone }
        // The state letter follows the command name, which is in parentheses and may itself hold spaces.
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")), close + 2 < stat.count else { return .unknown }
        switch stat[close + 2] {
        case UInt8(ascii: "T"), UInt8(ascii: "t"): return .stopped
        case UInt8(ascii: "Z"), UInt8(ascii: "X"): return .gone
        default: return .running
        }
        #else
        if kill(pid, 0) == 0 { return .running }
        return currentErrno() == ESRCH ? .gone : .unknown
        #endif
    }
}
