/// One listener of the registry as a look at the container finds it: its entry, its socket, whether it listens,
/// and what waits in its spool. The API shows it as a `ListenerStatus`.
package struct ListenerSurvey: Sendable {
    /// Whether it listens: probed, and its process's state asked for.
    package enum State: Sendable {
        /// Its socket answers.
        case alive
        /// Its process is stopped, or its backlog is full: it does not read now.
        case stopped
        /// Its socket does not answer, and it is not durable.
        case dead
        /// A durable identity whose process is not running.
        case offline
    }

    package var entry: RegistryEntry
    package var socketPath: String
    package var state: State
    package var spooledNotifications: Int
    package var spooledBytes: Int
}
