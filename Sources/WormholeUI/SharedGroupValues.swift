import Foundation
import Synchronization
import Wormhole

/// The process's centers and group values behind ``GroupStorage``: one center per container and one watching
/// ``Wormhole/GroupValue`` per value (container, name and type), made on first use and shared by every wrapper
/// that shows it, for the rest of the process's life.
///
/// SwiftUI makes a view's struct, and so its wrappers, over and over: a wrapper holds only what names its value,
/// and asks here each time it is read. A property initializer cannot throw, while opening a center can: a
/// container that cannot be opened is remembered as such (logged once, counted in ``GroupStorageStatistics``),
/// and its values read as their defaults.
package final class SharedGroupValues: Sendable {
    /// Where a wrapper's container is: an App Group's default container, or a folder.
    package enum Container: Hashable, Sendable, CustomStringConvertible {
        case group(String)
        case folder(String)

        package var description: String {
            switch self {
            case .group(let identifier): "the container of group \(identifier)"
            case .folder(let path): "the container at \(path)"
            }
        }
    }

    /// A value: its container, its name and its type, so that two wrappers that read one name as two types each
    /// get a value of their own (the one whose type the stored value is not reads its default, counted).
    private struct Key: Hashable {
        let container: Container
        let name: String
        let type: ObjectIdentifier
    }

    private struct State {
        var centers: [Container: Result<GroupNotificationCenter, WormholeError>] = [:]
        /// `GroupValue<Value?>`s, the optional standing for unset, so that each wrapper applies its own default.
        var values: [Key: any Sendable] = [:]
    }

    /// The one every ``GroupStorage`` uses. Where SwiftUI exists, other processes' changes are applied on the main
    /// queue, where SwiftUI reads; elsewhere on the center's receive thread.
    package static let shared: SharedGroupValues = {
        #if canImport(SwiftUI)
        SharedGroupValues(queue: .main)
        #else
        SharedGroupValues(queue: nil)
        #endif
    }()

    /// What ``GroupStorageStatistics/current`` reports, for every instance.
    static let counts = Mutex(GroupStorageStatistics())

    private let state = Mutex(State())
    private let queue: OperationQueue?

    /// - Parameter queue: Where the values apply the changes other processes make (see `GroupValue`'s `queue`).
    package init(queue: OperationQueue?) {
        self.queue = queue
    }

    /// The shared value `name` of `container`, watching for changes; nil when the container cannot be opened.
    package func value<Value: Codable & Sendable>(_ name: String, of type: Value.Type, in container: Container)
        -> GroupValue<Value?>?
    {
        let key = Key(container: container, name: name, type: ObjectIdentifier(Value.self))
        var failure: WormholeError?
        let value = state.withLock { state -> GroupValue<Value?>? in
            if let value = state.values[key] { return value as? GroupValue<Value?> }
            let opened: Result<GroupNotificationCenter, WormholeError>
            if let known = state.centers[container] {
                opened = known
            } else {
                opened = Self.open(container)
                state.centers[container] = opened
                if case .failure(let error) = opened { failure = error }
            }
            guard case .success(let center) = opened else { return nil }
            let value = GroupValue<Value?>(name, default: nil, in: center, queue: queue, tracksChanges: true)
            state.values[key] = value
            return value
        }
        if let failure {
            Self.counts.withLock { $0.unavailableContainers[failure.code, default: 0] += 1 }
            Log.warning("\(container) cannot be opened: \(failure); its group storage shows defaults and writes nothing")
        }
        return value
    }

    /// Counts a read or a write that found its container unavailable.
    static func countUnavailable(write: Bool) {
        counts.withLock { write ? ($0.writesDropped += 1) : ($0.defaultsShown += 1) }
    }

    private static func open(_ container: Container) -> Result<GroupNotificationCenter, WormholeError> {
        do {
            switch container {
            case .group(let identifier): return .success(try GroupNotificationCenter(groupIdentifier: identifier))
            case .folder(let path): return .success(try GroupNotificationCenter(containerURL: URL(fileURLWithPath: path)))
            }
        } catch let error as WormholeError {
            return .failure(error)
        } catch {
            return .failure(WormholeError(.system, "\(error)"))
        }
    }
}
