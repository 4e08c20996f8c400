#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import WormholeRelay

/// A stand-in for WatchConnectivity between two processes: the pair of daemons that carry a phone app's and its
/// Watch app's payloads, simulated in a shared folder, with what WatchConnectivity documents, faults included.
/// Each side's relay process opens a `FileLink` on the folder with its side; tests flip reachability and set
/// faults through the folder too.
///
/// The folder:
/// - `phone-to-watch/`, `watch-to-phone/`, one per direction, each with
///   - `transfers/`: queued transfers, one file each, named by a growing number, written whole (a temporary
///     name, then renamed). They stay while the receiving app is not running. The receiving link hands them over
///     one at a time, in order, while its app runs and is activated, and removes each before it hands it over: a
///     transfer handed to an app that dies while handling it is gone, as WatchConnectivity says.
///   - `messages/`: messages, taken the same way, but only while reachable, at most once: one not taken in two
///     seconds is withdrawn and its sender told `timedOut`; those left from before the receiver started are
///     dropped when it starts.
///   - `context`, and `context-delivered`, the last one handed over: a context is handed over once, when the
///     receiver runs, and not again while it is equal to the last one handed over.
/// - `phone.pid`, `watch.pid`: the process running each side's link, while it is activated.
/// - Files a test writes: `unreachable` (messages reach neither side), `not-paired`, `not-installed-<side>` (that
///   side's app is not installed), `not-activated-<side>` (that side's activation fails), `dies-handling-<side>`
///   (that side's process dies right after taking its next transfer, which is then gone; the file goes with it),
///   `repeats-transfers-<side>` (that side's link queues each transfer twice),
///   and `limit-<channel>` holding a number of bytes (the channel's largest payload).
public final class FileLink: RelayLink, Sendable {
    public enum Side: String, Sendable, CaseIterable {
        case phone
        case watch

        public var other: Side { self == .phone ? .watch : .phone }
    }

    /// A fault a test sets.
    public enum Fault: Sendable {
        case notPaired
        case notInstalled(Side)
        case notActivated(Side)
        /// The side's process dies as it takes its next transfer: the transfer is gone, as WatchConnectivity says
        /// of one handed to an app that dies while handling it.
        case diesHandlingTransfer(Side)
        /// The side's link queues each transfer twice: a transfer repeated.
        case repeatsTransfers(Side)

        var fileName: String {
            switch self {
            case .notPaired: "not-paired"
            case .notInstalled(let side): "not-installed-\(side.rawValue)"
            case .notActivated(let side): "not-activated-\(side.rawValue)"
            case .diesHandlingTransfer(let side): "dies-handling-\(side.rawValue)"
            case .repeatsTransfers(let side): "repeats-transfers-\(side.rawValue)"
            }
        }
    }

    /// WatchConnectivity's commonly cited limits: 64 KiB for a message or a transfer, 256 KiB for a context.
    public static let defaultLimits: [RelayChannel: Int] = [.message: 65_536, .transfer: 65_536, .context: 262_144]
    static let messageTimeout: Duration = .seconds(2)
    static let pollInterval: UInt32 = 5_000

    public let directory: URL
    public let side: Side
    private let limits: [RelayChannel: Int]
    private let events = DispatchQueue(label: "FileLink.events")
    private let state = Mutex(LinkState())

    private struct LinkState {
        var handler: (@Sendable (RelayLinkEvent) -> Void)?
        var status = RelayLinkStatus.notActivated
        var closed = false
        /// The transfers this run queued and has not seen taken: file name and payload.
        var queued: [String: Data] = [:]
        /// The messages on their way: file name, when sent, and the completion.
        var messages: [String: (sent: ContinuousClock.Instant, completion: @Sendable (RelayLinkError?) -> Void)] = [:]
        var lastNumber: UInt64 = 0
    }

    public init(directory: URL, side: Side) {
        self.directory = directory
        self.side = side
        var limits = Self.defaultLimits
        for channel in RelayChannel.allCases {
            let file = directory.appendingPathComponent("limit-\(channel.rawValue)")
            if let text = try? String(contentsOf: file, encoding: .utf8), let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                limits[channel] = limit
            }
        }
        self.limits = limits
        for direction in [outgoing, incoming] {
            for folder in ["transfers", "messages"] {
                try? FileManager.default.createDirectory(
                    at: direction.appendingPathComponent(folder), withIntermediateDirectories: true)
            }
        }
    }

    deinit {
        close()
    }

    private var outgoing: URL { directory.appendingPathComponent("\(side.rawValue)-to-\(side.other.rawValue)") }
    private var incoming: URL { directory.appendingPathComponent("\(side.other.rawValue)-to-\(side.rawValue)") }

    // MARK: RelayLink

    public func activate(_ handler: @escaping @Sendable (RelayLinkEvent) -> Void) {
        let first = state.withLock { state -> Bool in
            guard state.handler == nil, !state.closed else { return false }
            state.handler = handler
            return true
        }
        guard first else { return }
        // Messages from before this run are not delivered.
        for name in Self.names(in: incoming.appendingPathComponent("messages")) {
            try? FileManager.default.removeItem(at: incoming.appendingPathComponent("messages").appendingPathComponent(name))
        }
        Thread { [weak self] in
            while let self, self.poll() {
                usleep(Self.pollInterval)
            }
        }.start()
    }

    public var status: RelayLinkStatus { state.withLock { $0.status } }

    public func maximumPayloadSize(for channel: RelayChannel) -> Int { limits[channel] ?? 65_536 }

    public func sendMessage(_ payload: Data, completion: @escaping @Sendable (RelayLinkError?) -> Void) {
        let status = currentStatus()
        if let error = refusal(payload, over: .message, status: status, needsReach: true) {
            events.async { completion(error) }
            return
        }
        do {
            let name = try write(payload, into: outgoing.appendingPathComponent("messages"))
            state.withLock { $0.messages[name] = (ContinuousClock.now, completion) }
        } catch {
            events.async { completion(RelayLinkError(.failed, "message not written: \(error)")) }
        }
    }

    public func transfer(_ payload: Data) throws(RelayLinkError) {
        if let error = refusal(payload, over: .transfer, status: currentStatus(), needsReach: false) { throw error }
        do {
            let name = try write(payload, into: outgoing.appendingPathComponent("transfers"))
            state.withLock { $0.queued[name] = payload }
            if exists(Fault.repeatsTransfers(side).fileName) {
                _ = try write(payload, into: outgoing.appendingPathComponent("transfers"))
            }
        } catch {
            throw RelayLinkError(.failed, "transfer not written: \(error)")
        }
    }

    public var outstandingTransfers: [Data] {
        let folder = outgoing.appendingPathComponent("transfers")
        return Self.names(in: folder).compactMap { try? Data(contentsOf: folder.appendingPathComponent($0)) }
    }

    public func updateContext(_ payload: Data) throws(RelayLinkError) {
        if let error = refusal(payload, over: .context, status: currentStatus(), needsReach: false) { throw error }
        do {
            try payload.write(to: outgoing.appendingPathComponent("context"), options: .atomic)
        } catch {
            throw RelayLinkError(.failed, "context not written: \(error)")
        }
    }

    /// Stops the link: nothing more is handed over, and the side is no longer reachable.
    public func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed && state.handler != nil
        }
        if wasOpen { try? FileManager.default.removeItem(at: presenceFile(side)) }
    }

    // MARK: What tests set

    /// Makes the two sides reachable for messages (while both run), or not.
    public static func setReachable(_ reachable: Bool, directory: URL) {
        set("unreachable", !reachable, in: directory)
    }

    /// Sets or clears `fault`.
    public static func set(_ fault: Fault, _ on: Bool, directory: URL) {
        set(fault.fileName, on, in: directory)
    }

    /// The transfers queued from `side` that the other side has not taken.
    public static func waitingTransfers(from side: Side, directory: URL) -> Int {
        names(in: directory.appendingPathComponent("\(side.rawValue)-to-\(side.other.rawValue)/transfers")).count
    }

    private static func set(_ name: String, _ on: Bool, in directory: URL) {
        let file = directory.appendingPathComponent(name)
        if on {
            _ = FileManager.default.createFile(atPath: file.path, contents: Data())
        } else {
            try? FileManager.default.removeItem(at: file)
        }
    }

    // MARK: Inside

    private func exists(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path)
    }

    private func presenceFile(_ side: Side) -> URL { directory.appendingPathComponent("\(side.rawValue).pid") }

    /// Whether `side`'s link runs in a live process.
    private func isRunning(_ side: Side) -> Bool {
        guard let text = try? String(contentsOf: presenceFile(side), encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
        else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    private func currentStatus() -> RelayLinkStatus {
        let activated = state.withLock { $0.handler != nil && !$0.closed } && !exists(Fault.notActivated(side).fileName)
        let paired = !exists(Fault.notPaired.fileName)
        return RelayLinkStatus(
            activation: activated ? .activated : .notActivated, isPaired: paired,
            isCounterpartInstalled: !exists(Fault.notInstalled(side.other).fileName),
            isReachable: activated && paired && !exists("unreachable") && isRunning(side.other))
    }

    /// Why `channel` refuses `payload` now, as WatchConnectivity would say it; nil when it takes it.
    private func refusal(_ payload: Data, over channel: RelayChannel, status: RelayLinkStatus, needsReach: Bool) -> RelayLinkError? {
        if status.activation != .activated { return RelayLinkError(.notActivated, "the session is not activated") }
        if !status.isPaired { return RelayLinkError(.notPaired, "no counterpart device is paired") }
        if !status.isCounterpartInstalled { return RelayLinkError(.counterpartNotInstalled, "the counterpart app is not installed") }
        if needsReach, !status.isReachable { return RelayLinkError(.notReachable, "the counterpart is not reachable") }
        let limit = maximumPayloadSize(for: channel)
        if payload.count > limit { return RelayLinkError(.payloadTooLarge, "\(payload.count) bytes over the \(channel.rawValue) channel's \(limit)") }
        return nil
    }

    /// Writes `payload` whole under the next number in `folder`; returns its name.
    private func write(_ payload: Data, into folder: URL) throws -> String {
        let highest = Self.names(in: folder).last.flatMap { UInt64($0) } ?? 0
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let number = state.withLock { state -> UInt64 in
            state.lastNumber = max(state.lastNumber + 1, highest + 1, now)
            return state.lastNumber
        }
        let name = String(format: "%020llu", number)
        let temporary = folder.appendingPathComponent(".\(name).\(getpid())")
        try payload.write(to: temporary)
        try FileManager.default.moveItem(at: temporary, to: folder.appendingPathComponent(name))
        return name
    }

    /// The payload files of `folder`, in order; temporary ones left out.
    private static func names(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
            .filter { !$0.hasPrefix(".") && $0.count == 20 && UInt64($0) != nil }.sorted()
    }

    /// Removes the oldest payload of `folder` and returns it: it is handed over, whatever happens next.
    private func take(from folder: URL) -> Data? {
        for name in Self.names(in: folder) {
            let file = folder.appendingPathComponent(name)
            guard let payload = try? Data(contentsOf: file) else { continue }
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                continue
            }
            return payload
        }
        return nil
    }

    /// One round of the daemon: status, what arrived, what the other side took. Returns false once closed.
    private func poll() -> Bool {
        guard let handler = state.withLock({ $0.closed ? nil : $0.handler }) else { return false }
        let status = currentStatus()
        if status.activation == .activated {
            // Present while activated: the other side's messages reach this one.
            if !isRunning(side) { try? Data("\(getpid())".utf8).write(to: presenceFile(side), options: .atomic) }
        } else {
            try? FileManager.default.removeItem(at: presenceFile(side))
        }
        let changed = state.withLock { state -> Bool in
            defer { state.status = status }
            return state.status != status
        }
        if changed { events.async { handler(.statusChanged(status)) } }
        guard status.activation == .activated else { return true }
        // What the other side sent.
        while let payload = take(from: incoming.appendingPathComponent("transfers")) {
            let dies = directory.appendingPathComponent(Fault.diesHandlingTransfer(side).fileName)
            if (try? FileManager.default.removeItem(at: dies)) != nil {
                // Taken, and the process ends before its relay sees it.
                _exit(9)
            }
            events.async { handler(.received(payload, over: .transfer)) }
        }
        if status.isPaired {
            while let payload = take(from: incoming.appendingPathComponent("messages")) {
                events.async { handler(.received(payload, over: .message)) }
            }
        }
        let context = incoming.appendingPathComponent("context")
        let delivered = incoming.appendingPathComponent("context-delivered")
        if let payload = try? Data(contentsOf: context), payload != (try? Data(contentsOf: delivered)) {
            try? payload.write(to: delivered, options: .atomic)
            events.async { handler(.received(payload, over: .context)) }
        }
        // What the other side took of this side's.
        let transfers = Set(Self.names(in: outgoing.appendingPathComponent("transfers")))
        let messages = Set(Self.names(in: outgoing.appendingPathComponent("messages")))
        let now = ContinuousClock.now
        let (finished, answered, expired) = state.withLock { state in
            let finished = state.queued.filter { !transfers.contains($0.key) }
            for name in finished.keys { state.queued[name] = nil }
            let answered = state.messages.filter { !messages.contains($0.key) }
            let expired = state.messages.filter { messages.contains($0.key) && now - $0.value.sent > Self.messageTimeout }
            for name in answered.keys { state.messages[name] = nil }
            for name in expired.keys { state.messages[name] = nil }
            return (finished, answered, expired)
        }
        for (_, payload) in finished { events.async { handler(.transferFinished(payload, error: nil)) } }
        for (_, message) in answered { events.async { message.completion(nil) } }
        for (name, message) in expired {
            let withdrawn = (try? FileManager.default.removeItem(at: outgoing.appendingPathComponent("messages").appendingPathComponent(name))) != nil
            // Taken just now after all: it arrived.
            events.async { message.completion(withdrawn ? RelayLinkError(.timedOut, "the counterpart did not answer") : nil) }
        }
        return true
    }
}
