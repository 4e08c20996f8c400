import Foundation
import Synchronization
import Wormhole

/// `request` and `respond`.
extension Commands {
    /// How long `request` waits for a reply without `--timeout`, in seconds.
    static let defaultRequestTimeout = 5.0

    /// Asks the responders of `--name` and prints the first reply as one JSON line, as `listen` prints a
    /// notification. No responder, or no reply within `--timeout`, is a failure (exit status 1).
    static func request(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions.union(["name", "object", "user-info", "timeout"]))
        guard let name = options["name"] else { throw UsageError("request needs --name") }
        let seconds = try options["timeout"].map { text throws(UsageError) -> Double in
            guard let seconds = Double(text), seconds > 0, seconds <= 24 * 3600 else {
                throw UsageError("--timeout takes a number of seconds, more than 0 and at most 86400, not '\(text)'")
            }
            return seconds
        } ?? defaultRequestTimeout
        let userInfoText = try options["user-info"].map { try JSONValue.text(of: $0) }
        // Read before the container is opened, so that a mistake leaves nothing behind.
        _ = try userInfoText.map { text throws(UsageError) in try JSONValue.userInfo(from: text) }
        let center = try center(options, command: "request", existing: true)
        let outcome = Mutex<Result<String, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let object = options["object"]
        Task {
            let result: Result<String, any Error>
            do {
                let userInfo = try userInfoText.map { text throws(UsageError) in try JSONValue.userInfo(from: text) }
                let reply = try await center.request(
                    name: Notification.Name(name), object: object, userInfo: userInfo, timeout: .seconds(seconds))
                result = .success(JSONValue.line(for: reply))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let line)?:
            Output.line(line)
            return 0
        case .failure(let error as WormholeError)? where [.invalidNotification, .unsupportedValue, .payloadTooLarge].contains(error.code):
            // The name, object or userInfo typed cannot be sent: a mistake in the command line.
            throw UsageError("\(error)")
        case .failure(let error)?:
            throw error
        case nil:
            throw ToolFailure("the request ended without an outcome")
        }
    }

    /// Answers each request for `--name` with `--reply`, printing each request as one JSON line; exits after
    /// `--count` answers (with `--count 0`, once the responder is registered).
    static func respond(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "object", "reply", "count", "client"]), flags: ["create"])
        guard let name = options["name"] else { throw UsageError("respond needs --name") }
        let limit = try options.integer("count")
        let replyText = try options["reply"].map { try JSONValue.text(of: $0) }
        _ = try replyText.map { text throws(UsageError) in try JSONValue.userInfo(from: text) }
        // Held only here: SIGTERM and SIGINT close the center, which takes this process out of the registry, then exit.
        let open = Mutex<GroupNotificationCenter?>(try center(options, command: "respond"))
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                open.withLock { $0 = nil }
                exit(0)
            }
            source.resume()
            return source
        }
        let answered = Counter()
        let done = DispatchSemaphore(value: 0)
        // One request at a time, each block followed by its reply's post: once the count is reached, the last
        // reply is sent when this queue is idle.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let path = open.withLock { $0?.containerURL.path } ?? ""
        open.withLock { $0 }?.addResponder(forName: Notification.Name(name), object: options["object"], queue: queue) { request in
            let count = answered.increment()
            if limit.map({ count <= $0 }) ?? true { Output.line(JSONValue.line(for: request)) }
            if count == limit { done.signal() }
            return replyText.flatMap { try? JSONValue.userInfo(from: $0) }
        }
        if limit == 0 { exit(0) }
        // Its only responder is added: a durable identity's spool is handed over now, not a moment later.
        open.withLock { $0 }?.deliverSpooledNotifications()
        Output.error("wormhole: responding to \(name) in \(path) (pid \(getpid()))")
        done.wait()
        queue.waitUntilAllOperationsAreFinished()
        withExtendedLifetime(signals) { open.withLock { $0 = nil } }
        exit(0)
    }
}
