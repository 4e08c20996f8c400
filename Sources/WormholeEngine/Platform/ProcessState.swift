/// What the system says of another process, for `wormhole status` and for a poster's lease in a spool.
package enum ProcessState: String, Sendable {
    case running, stopped, gone, unknown

    /// Reads the state of `pid`: on Linux from `/proc/<pid>/stat`, elsewhere only whether it exists
    /// (``Sys/processState(_:)``).
    package static func of(_ pid: Int32) -> ProcessState {
        guard pid > 0 else { return .unknown }
        return Sys.processState(pid)
    }

    /// Whether this system tells a stopped process from a running one (Linux); elsewhere a stopped process
    /// reads as running.
    package static var tellsStopped: Bool { Sys.tellsStoppedProcesses }

    /// The state of the process `mark` names. Gone also when its pid now belongs to a process that started at
    /// another time (the pid was reused), where the system tells a process's start (Linux). Unknown where the
    /// system will not say: a process of another pid namespace (its pid means another process here), and on
    /// Apple platforms a sandboxed app, which gets no answer about another app's process. Not an error: a
    /// mark that names no process (a pid of 0 or less) is unknown, and nothing is ever signalled.
    package static func of(_ mark: ProcessMark) -> ProcessState {
        guard mark.pid > 0, mark.namespace == ProcessMark.current.namespace else { return .unknown }
        let state = Sys.processState(mark.pid)
        guard state != .gone, mark.start != 0, let start = Sys.processStart(mark.pid) else { return state }
        return start == mark.start ? state : .gone
    }
}

/// A process as another process can tell it later, written into a poster's lease (``LeaseFormat``): its pid, when
/// it started as the system counts (Linux: clock ticks since boot, from `/proc/<pid>/stat`), and its pid
/// namespace (Linux: the inode of `/proc/self/ns/pid`). The start and the namespace are 0 where the system does
/// not say (Apple platforms).
package struct ProcessMark: Hashable, Sendable {
    package var pid: Int32
    package var start: UInt64
    package var namespace: UInt64

    package init(pid: Int32, start: UInt64, namespace: UInt64) {
        self.pid = pid
        self.start = start
        self.namespace = namespace
    }

    /// This process, read once (``Sys/currentProcessMark()``).
    package static let current = Sys.currentProcessMark()
}
