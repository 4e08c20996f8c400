/// What the system says of another process, for `wormhole status`.
enum ProcessState: String, Sendable {
    case running, stopped, gone, unknown

    /// Reads the state of `pid`: on Linux from `/proc/<pid>/stat`, elsewhere only whether it exists
    /// (``Sys/processState(_:)``).
    static func of(_ pid: Int32) -> ProcessState {
        guard pid > 0 else { return .unknown }
        return Sys.processState(pid)
    }
}
