import Foundation
import Synchronization
import Wormhole

/// `request` and `respond`.
extension Commands {
    /// How long `request` waits for a reply without `--timeout`.
    static let defaultRequestTimeout = Duration.seconds(5)
    /// The longest `--timeout` of `request`, in seconds: the library's limit, a day.
    static let maximumRequestTimeout = Int(Limits.maximumRequestTimeout.components.seconds)

    /// Asks the responders of the name (`NAME` or `--name`) and prints the first reply as one JSON line, as
    /// `listen` prints a notification. No responder, or no reply within `--timeout`, is a failure (exit status 1).
    static func request(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "object", "user-info", "timeout"]), positionals: 1)
        let name = try options.name(for: "request", required: true) ?? ""
        let timeout = try options.duration("timeout", atMost: maximumRequestTimeout) ?? defaultRequestTimeout
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
                    name: Notification.Name(name), object: object, userInfo: userInfo, timeout: timeout)
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

    /// Answers each request for the name (`NAME` or `--name`) with `--reply`, printing each request as one JSON
    /// line; exits after `--count` answers (with `--count 0`, once the responder is registered).
    static func respond(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "object", "reply", "count", "client"]), flags: ["create"],
            positionals: 1)
        let name = try options.name(for: "respond", required: true) ?? ""
        let limit = try options.integer("count")
        let replyText = try options["reply"].map { try JSONValue.text(of: $0) }
        _ = try replyText.map { text throws(UsageError) in try JSONValue.userInfo(from: text) }
        let consumer = Consumer(center: try center(options, command: "respond"), limit: limit)
        let path = consumer.center?.containerURL.path ?? ""
        // One request at a time, each block followed by its reply's post: a request the command did not print is
        // not answered, and goes back to a durable identity's spool when the command stops.
        consumer.center?.addResponder(forName: Notification.Name(name), object: options["object"], queue: consumer.queue) { request in
            guard let count = consumer.take() else { return nil }
            guard Output.line(JSONValue.line(for: request)) else {
                consumer.stop()
                return nil
            }
            if consumer.isLast(count) { consumer.stop() }
            return replyText.flatMap { try? JSONValue.userInfo(from: $0) }
        }
        // Registered, with nothing taken: a durable responder's requests wait for its next run.
        if limit == 0 { exit(0) }
        consumer.run(saying: "wormhole: responding to \(name) in \(path) (pid \(getpid()))")
    }
}
