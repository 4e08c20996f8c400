#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Named points in every write and drain path where a debug build stops itself (`SIGSTOP`) when
/// `WORMHOLE_STOP_AT` names them (comma-separated), once per point per process. Tests use it to prove that a
/// process stopped there holds no file lock and keeps nobody waiting. Release builds compile it to nothing.
package enum StopPoint {
    #if DEBUG
    private static let armed: Set<String> = {
        let names = ProcessInfo.processInfo.environment["WORMHOLE_STOP_AT"] ?? ""
        return Set(names.split(separator: ",").map(String.init))
    }()
    private static let fired = Mutex<Set<String>>([])
    #endif

    @inline(__always)
    package static func reached(_ name: String) {
        #if DEBUG
        guard !armed.isEmpty, armed.contains(name) else { return }
        guard fired.withLock({ $0.insert(name).inserted }) else { return }
        raise(SIGSTOP)
        #endif
    }
}
