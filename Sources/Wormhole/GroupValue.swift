import Dispatch
import Foundation
import Observation
import Synchronization
import WormholeEngine

/// A named value that every process of the group can read at any time, update atomically, and watch change:
/// what `UserDefaults(suiteName:)` is used for, with the changes other processes make seen at once.
///
/// ```swift
/// let count = GroupValue("cart.count", default: 0, in: center, queue: .main)
/// try count.update { $0 += 1 }           // atomic across processes: no update is ever lost
/// Text("\(count.value)")                 // SwiftUI redraws when any process changes it, with no flag
/// count.value = 0                        // settable, so SwiftUI can bind to it (errors are logged and counted)
/// for await value in count.values { … } // the current value, then every change
/// ```
///
/// The value lives in the container (`values/<name>/`, one file per version) and survives its writers: a
/// process started later, or after every writer exited, reads it. Each change is also posted as an ordinary
/// notification named ``notificationName(for:)`` whose userInfo holds `"value"` (the value as property-list
/// values: a bare number or string, an array, or a dictionary of a struct's fields; nil is `NSNull`, a string
/// always a string), `"version"` (an `Int` that grows by one with each change) and `"format"` (`2`), so untyped
/// observers and `wormhole listen` see it too. Values are stored and travel through the same secure codec as
/// notifications; values stored by earlier versions of Wormhole read as they were written.
///
/// No file lock is ever held: an update writes a new version whole and claims its number with `link(2)`, so a
/// process stopped or killed in the middle of its update blocks nobody.
///
/// ``GroupNotificationCenter/groupValueNames()`` (and `wormhole value --list`) lists the values a container holds.
public final class GroupValue<Value: Codable & Sendable>: Observable, Sendable {
    /// The value's name, shared by every process that uses it.
    public let name: String
    /// What ``value`` is until a process sets it, after ``reset()``, and when the stored value is of another type.
    public let defaultValue: Value

    private let center: GroupNotificationCenter
    private let versions: ValueVersions
    private let queue: OperationQueue?
    /// Whether reading ``value`` starts watching for other processes' changes: nil on a read made on the main
    /// thread or the main queue only.
    private let tracksChanges: Bool?
    private let registrar = ObservationRegistrar()
    private let watching = Mutex<Watch?>(nil)

    /// What the value does while something watches it: its observer, a timer, and who waits in ``values``.
    private struct Watch {
        var observer: Observer?
        var timer: WatchTimer?
        /// The newest version Observation was told of.
        var lastVersion: UInt64
        var sequences: [UInt64: Subscriber] = [:]
        var nextSequence: UInt64 = 0
        var rejectedVersion: UInt64 = 0
    }

    /// One ``values`` sequence: where its values go, and the version it yielded last, so that it never yields
    /// one as old or older. Both change only under the lock, so two checks that read different versions
    /// (the timer's and the observer's) never yield out of order.
    private struct Subscriber {
        let continuation: AsyncStream<Value>.Continuation
        var lastVersion: UInt64
    }

    /// A value of `center`'s container.
    ///
    /// `Value` is any `Codable` type. In a target whose default isolation is the main actor (a new Xcode 26 app),
    /// declare a type of your own `nonisolated struct Settings: Codable { … }`: its conformance is otherwise
    /// isolated to the main actor, which a value decoded on other threads cannot use ("main actor-isolated
    /// conformance … cannot satisfy conformance requirement for a 'Sendable' type parameter").
    /// - Parameters:
    ///   - name: Its name; processes that use the same name share the value.
    ///   - defaultValue: What it is until set.
    ///   - center: The center whose container holds the value, and which announces its changes.
    ///   - queue: Where changes made by other processes are applied: where observers of ``value`` (Observation,
    ///     SwiftUI) are told, and where ``values`` yields. Pass `.main` for a user interface; nil, the default,
    ///     applies them on the center's receive thread.
    ///   - tracksChanges: Whether reading ``value`` starts watching for changes other processes make, so that
    ///     Observation (a SwiftUI view, `withObservationTracking`) is told of them. nil, the default: a read on the
    ///     main thread or the main queue does — where SwiftUI evaluates views and main-actor code runs, so a view that shows the value
    ///     redraws on any process's change with no flag, as with `@AppStorage` — and a read on another thread does
    ///     not (a widget's timeline provider, a background task reading it once). `true`: any read does (Observation
    ///     tracking off the main thread, as in a daemon); `false`: none does. Watching makes the process a listener
    ///     of the container, with a timer that looks for changes every second, until the value is released; a value
    ///     never read that way costs nothing. Observation cannot tell a tracked read from another, so the thread
    ///     stands for it. ``values`` always watches.
    public init(
        _ name: String, default defaultValue: Value, in center: GroupNotificationCenter, queue: OperationQueue? = nil,
        tracksChanges: Bool? = nil
    ) {
        self.name = name
        self.defaultValue = defaultValue
        self.center = center
        self.queue = queue
        self.tracksChanges = tracksChanges
        versions = ValueVersions(name, in: center.endpoint)
    }

    deinit {
        guard let observer = watching.withLock({ watch -> Observer? in
            watch?.timer?.source.cancel()
            for sequence in watch?.sequences.values ?? [:].values { sequence.continuation.finish() }
            return watch?.observer
        }) else { return }
        center.removeObserver(observer)
    }

    /// The name of the notification posted with each change of the value `name`.
    public static func notificationName(for name: String) -> Notification.Name {
        Notification.Name(ValueVersions.notification(for: name))
    }

    /// The current value, read from the container: the default until a process sets it, and when the stored
    /// value does not decode as `Value` (counted in ``WormholeStatistics/valuesRejected`` and logged).
    ///
    /// Observable: reading it inside `withObservationTracking` (or a SwiftUI view's body) makes a change by this
    /// process call the tracking's `onChange`, and, once a read started watching (on the main thread, or any
    /// thread with `tracksChanges: true` at init), a change by any process, on the queue given at init. A read
    /// that starts no watch (another thread, by default) makes the process no listener.
    ///
    /// Settable, so that SwiftUI can bind to it (`$model.unread.value`, with `@Bindable`): setting never throws.
    /// A value that cannot be written (see ``set(_:)``) is logged and counted in
    /// ``WormholeStatistics/valueWritesFailed``, and the value stays as it was; call ``set(_:)`` to get the error.
    public var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            if tracksChanges ?? MainQueue.isCurrent { startWatching() }
            return current().value
        }
        set {
            do {
                try set(newValue)
            } catch {
                center.endpoint.counters.count { $0.valueWritesFailed += 1 }
                Log.warning("value \(name) not set: \(error)")
            }
        }
    }

    /// Replaces the value.
    /// - Throws: ``WormholeError/Code/unsupportedValue`` when `newValue` cannot be encoded;
    ///   ``WormholeError/Code/corruptData`` when the stored value is of another type (it is not overwritten:
    ///   ``reset()`` first); ``WormholeError/Code/payloadTooLarge``; a system error when the container cannot be
    ///   written.
    public func set(_ newValue: Value) throws {
        try update { $0 = newValue }
    }

    /// Reads, changes and writes the value as one step across processes: when several processes update at once,
    /// no update is lost. `body` may run more than once (when another process changed the value between the
    /// read and the write, it runs again on the newer value), so it should only compute.
    /// - Returns: What `body` returned on its run whose result was written.
    /// - Throws: What `body` throws (nothing is written); the errors of ``set(_:)``.
    @discardableResult
    public func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
        while true {
            let reading = try read()
            var value = try decode(reading.archive, version: reading.version)
            let result = try body(&value)
            // Claimed past the newest version, whole or not: a damaged one never stands in the way.
            let next = try ValueVersions.successor(of: reading.newest)
            if try publish(try encode(value, version: next), version: next) { return result }
        }
    }

    /// Returns the value to its default, whatever type the stored value has.
    /// - Throws: A system error when the container cannot be written.
    public func reset() throws {
        while true {
            if try publish(nil, version: try ValueVersions.successor(of: try read().newest)) { return }
        }
    }

    /// The current value, then each change any process makes, in the order they took effect: each value yielded
    /// is of a newer version than the one before it, never an older one. Changes that come faster than the
    /// reader may be coalesced, but the last one always arrives, also when its writer was killed before
    /// announcing it (the container is looked at every second).
    public var values: GroupValues<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(64))
        startWatching()
        let (version, value) = current()
        let id = watching.withLock { watch -> UInt64? in
            // Yielded under the lock, as checks do: a check that read a newer version yields it after this.
            continuation.yield(value)
            guard watch != nil else { return nil }
            watch!.nextSequence += 1
            watch!.sequences[watch!.nextSequence] = Subscriber(continuation: continuation, lastVersion: version)
            return watch!.nextSequence
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                self?.watching.withLock { _ = $0?.sequences.removeValue(forKey: id) }
            }
        }
        return GroupValues(stream: stream)
    }

    // MARK: Reading and writing

    /// The newest version and its value (the default when there is none, or it is of another type).
    private func current() -> (version: UInt64, value: Value) {
        do {
            let reading = try read()
            let version = reading.version
            do {
                return (version, try decode(reading.archive, version: version))
            } catch {
                let first = watching.withLock { watch -> Bool in
                    guard watch?.rejectedVersion != version else { return false }
                    watch?.rejectedVersion = version
                    return true
                }
                if first {
                    center.endpoint.counters.count { $0.valuesRejected += 1 }
                    Log.warning("\(error); reading the default instead")
                }
                return (version, defaultValue)
            }
        } catch {
            Log.warning("value \(name) cannot be read: \(error); reading the default instead")
            return (0, defaultValue)
        }
    }

    /// The current value as ``value`` reads it, or why it cannot be read: where ``value`` reads the default for a
    /// stored value that is damaged (no version near the newest is whole: emptied, cut short, a FIFO, a failed
    /// check) or that does not decode as `Value` (another type, a later format), this throws. A value never set,
    /// or reset, is the default; a damaged version behind which a whole one lies is skipped, as ``value`` skips it.
    /// Counts nothing in ``WormholeStatistics/valuesRejected``.
    /// - Throws: ``WormholeError/Code/corruptData`` for a damaged value, or one that is not a `Value`; a system
    ///   error when the container cannot be read.
    package func readValue() throws(WormholeError) -> Value {
        let reading = try read()
        if let damage = reading.damage {
            throw WormholeError(.corruptData, "value \(name) is damaged: no version near the newest is whole (\(damage))")
        }
        return try decode(reading.archive, version: reading.version)
    }

    /// The newest whole version; versions skipped as damaged are counted and logged, once each.
    private func read() throws(WormholeError) -> ValueVersions.Reading {
        try versions.latest()
    }

    /// The value a version's userInfo archive holds: the default for none or a reset.
    ///
    /// A value stored by this version of Wormhole carries `"format": 2` and is a ``ValueTreeLeaf`` tree (nil is
    /// `NSNull`). One without `"format"` was stored by an earlier version, through `PropertyListEncoder`: there
    /// the string `"$null"` is nil where the type allows nil, as `PropertyListDecoder` read it, and a string
    /// where the type asks for one. Another format is of a later version: read as another type is.
    private func decode(_ archive: ArchiveBytes?, version: UInt64) throws(WormholeError) -> Value {
        guard let archive else { return defaultValue }
        let userInfo = try UserInfoCodec.decode(archive, allowed: AllowedClasses.groupValue)
        let format = userInfo[ValueFormat.formatKey]
        let earlier = format == nil
        do {
            // The format first: a later one may keep its value under another key, and must not read as unset
            // (which update would then overwrite).
            if !earlier {
                guard let number = format as? NSNumber, !number.isBoolean, !number.isReal, number.int64Value == ValueFormat.current else {
                    throw WormholeError(.corruptData, "stored in format \(format ?? ""), which this version does not read")
                }
            }
            guard let stored = userInfo[ValueFormat.valueKey] else {
                // Earlier versions read a value without one as unset; this format always writes one.
                if earlier { return defaultValue }
                throw WormholeError(.corruptData, "holds no \"\(ValueFormat.valueKey)\"")
            }
            return try ValueTreeDecoder.decode(
                Box.self, from: [ValueFormat.valueKey: stored],
                userInfo: [.storedPropertyList: StoredPropertyList(value: stored)], nullStrings: earlier
            ).value
        } catch {
            throw WormholeError(.corruptData, "value \(name) (version \(version)) is not a \(Value.self): \(error)")
        }
    }

    /// The userInfo archive of `value` as `version`, in the current format.
    private func encode(_ value: Value, version: UInt64) throws(WormholeError) -> [UInt8] {
        let stored: Any
        do {
            guard let value = (try ValueTreeEncoder.encode(Box(value: value)) as? [String: Any])?["value"] else {
                throw WormholeError(.unsupportedValue, "\(Value.self) does not encode as a property list")
            }
            stored = value
        } catch let error as WormholeError {
            throw error
        } catch {
            throw WormholeError(.unsupportedValue, "value \(name) could not be encoded: \(error)")
        }
        return try UserInfoCodec.encode(
            [ValueFormat.valueKey: stored, ValueFormat.versionKey: Int(truncatingIfNeeded: version),
             ValueFormat.formatKey: ValueFormat.current],
            maximumSize: GroupNotificationCenter.maximumPayloadSize)
    }

    /// Writes `archive` (nil: the default) as `version`, then announces it; false when another process took
    /// that version first. This process's own observers of the value learn of the change at once, watching or not.
    private func publish(_ archive: [UInt8]?, version: UInt64) throws(WormholeError) -> Bool {
        try versions.publish(archive, version: version) { registrar.withMutation(of: self, keyPath: \.value) {} }
    }

    // MARK: Watching

    /// Starts, once, what tells watchers of changes: an observer of the change notification, and a timer that
    /// looks at the container every second for changes nobody announced.
    private func startWatching() {
        let started = watching.withLock { watch -> Bool in
            guard watch == nil else { return false }
            watch = Watch(lastVersion: 0)
            return true
        }
        guard started else { return }
        let initial = (try? read().version) ?? 0
        let observer = center.addObserver(
            forName: Self.notificationName(for: name), object: nil, allowedClasses: AllowedClasses.groupValue, queue: queue
        ) { [weak self] _ in
            self?.check()
        }
        let timer = WatchTimer()
        timer.source.setEventHandler { [weak self] in
            guard let self else { return }
            if let queue = self.queue { queue.addOperation { [weak self] in self?.check() } } else { self.check() }
        }
        timer.source.resume()
        watching.withLock { watch in
            watch?.observer = observer
            watch?.timer = timer
            let last = watch?.lastVersion ?? 0
            watch?.lastVersion = max(last, initial)
        }
    }

    /// Tells watchers when the newest version is newer than the last they were told of.
    ///
    /// Several checks may run at once (the timer's, the observer's) and read different versions: which
    /// sequence is handed which value is decided and done under the lock, so a check that read an older
    /// version than another yields nothing after it. A yield only queues the value; Observation's observers,
    /// which may re-enter, are told after the lock.
    private func check() {
        let (version, value) = current()
        let newer = watching.withLock { watch -> Bool in
            guard watch != nil else { return false }
            for (id, sequence) in watch!.sequences where sequence.lastVersion < version {
                watch!.sequences[id]?.lastVersion = version
                sequence.continuation.yield(value)
            }
            guard version > watch!.lastVersion else { return false }
            watch!.lastVersion = version
            return true
        }
        if newer { registrar.withMutation(of: self, keyPath: \.value) {} }
    }

    private struct Box: Codable {
        var value: Value
    }
}

/// A timer that fires every second, for a ``GroupValue`` to look for changes nobody announced.
/// Safe because the source is set up before it is shared, and `DispatchSource` is thread-safe after that.
private final class WatchTimer: @unchecked Sendable {
    let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())

    init() {
        source.schedule(deadline: .now() + 1, repeating: 1)
    }

    deinit {
        source.cancel()
    }
}

/// The current value of a ``GroupValue``, then its changes, as an asynchronous sequence.
public struct GroupValues<Value: Sendable>: AsyncSequence, Sendable {
    /// A value: the current one first, then each change.
    public typealias Element = Value
    /// The sequence never fails; it ends when its ``GroupValue`` goes away.
    public typealias Failure = Never

    let stream: AsyncStream<Value>

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncStream<Value>.Iterator {
        stream.makeAsyncIterator()
    }
}

/// The property list a ``GroupValue`` holds, as stored. A decoder reads a stored real `1.0` as the integer `1` as
/// readily as a `Double`, so a `Decodable` value type that must tell them apart (one that holds any property list,
/// as the `wormhole` tool's does) finds the stored value in its decoder's `userInfo` under
/// `CodingUserInfoKey.storedPropertyList`, when it is the group value itself (a coding path of one key).
public struct StoredPropertyList: @unchecked Sendable {
    /// A property-list value (`String`, `NSNumber`, `Date`, `Data`, arrays and dictionaries of them) or `NSNull`,
    /// which stands for nil: immutable Foundation values, never mutated. (In a value stored by an earlier
    /// version of Wormhole, nil is the string `"$null"` instead, and there is no `NSNull`.)
    public let value: Any
}

extension CodingUserInfoKey {
    /// Under this key, a ``GroupValue``'s decoder carries the ``StoredPropertyList`` being decoded.
    public static let storedPropertyList = CodingUserInfoKey(rawValue: "wormhole.storedPropertyList")!
}
