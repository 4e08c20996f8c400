import Foundation
import Synchronization
import Wormhole

/// `listen`, `post` and `status`.
enum Commands {
    static let containerOptions: Set<String> = ["group", "container"]

    /// The center `--group` or `--container` names; durable as `--client ID` when given. With `existing`, for
    /// commands that only read, the container must exist already: nothing is created. Otherwise a folder that
    /// does not exist is made only with `--create`, so that a mistyped path or group is an error rather than a new
    /// empty container nobody listens in; an existing folder is used as it is.
    /// - Throws: A ``UsageError`` (exit status 2) when the command line names no container, one that does not
    ///   exist, or a path or group the library refuses as a container; what the library throws otherwise.
    static func center(_ options: Options, command: String, existing: Bool = false) throws -> GroupNotificationCenter {
        let url: URL
        do {
            switch (options["group"], options["container"]) {
            case (let group?, nil): url = try GroupNotificationCenter.defaultContainerURL(groupIdentifier: group)
            case (nil, let path?): url = URL(fileURLWithPath: path)
            default: throw UsageError("give exactly one of --group ID and --container DIR")
            }
            if !options.has("create") && !FileManager.default.fileExists(atPath: url.path) {
                // Only post, listen and value make a container; the others are told where to look instead.
                let hint = ["post", "listen", "value", "respond"].contains(command)
                    ? "pass --create to make it" : "\(command) never makes one (post, listen, value and respond do, with --create)"
                throw UsageError("container \(url.path) does not exist; \(hint)")
            }
            if existing { return try GroupNotificationCenter(existingContainerURL: url) }
            if let group = options["group"] {
                if let client = options["client"] { return try GroupNotificationCenter(groupIdentifier: group, clientIdentifier: client) }
                return try GroupNotificationCenter(groupIdentifier: group)
            }
            return try GroupNotificationCenter(containerURL: url, clientIdentifier: options["client"])
        } catch let error as WormholeError where error.code == .invalidNotification || isMistake(error, options) {
            throw UsageError("\(error)")
        }
    }

    /// Whether the library refused the container the command line names for what the command line says, not
    /// for what the system said: a group that names no folder, a path that is no folder, a folder this process
    /// can look into that holds no container. A folder it may not enter, or any error with an errno, is a
    /// failure (exit status 1), as for a post into another user's container.
    private static func isMistake(_ error: WormholeError, _ options: Options) -> Bool {
        guard error.code == .invalidContainer, error.errno == nil else { return false }
        guard let path = options["container"] else { return true }
        var isFolder: ObjCBool = false
        return !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) || !isFolder.boolValue
            || FileManager.default.isExecutableFile(atPath: path)
    }

    /// Prints each notification as a JSON line; exits after `--count` of them.
    static func listen(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(arguments, options: containerOptions.union(["name", "object", "count", "client"]), flags: ["create"])
        let limit = try options.integer("count")
        let consumer = Consumer(center: try center(options, command: "listen"), limit: limit)
        if limit == 0 { exit(0) }
        let path = consumer.center?.containerURL.path ?? ""
        // Printed on a queue of its own, one at a time: a notification counts as taken once printed, and what
        // waits when the command stops goes back to a durable identity's spool.
        consumer.center?.addObserver(
            forName: options["name"].map { Notification.Name($0) }, object: options["object"], queue: consumer.queue
        ) { note in
            guard let count = consumer.take() else { return }
            // A reader that went: the command stops, and gives back what it did not print.
            guard Output.line(JSONValue.line(for: note)) else { return consumer.stop() }
            if consumer.isLast(count) { consumer.stop() }
        }
        consumer.run(saying: "wormhole: listening in \(path) (pid \(getpid()))")
    }

    /// Posts one notification and prints what was delivered and spooled.
    static func post(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions.union(["name", "object", "user-info"]), flags: ["retain", "create"])
        guard let name = options["name"] else { throw UsageError("post needs --name") }
        let userInfo = try options["user-info"].map { try JSONValue.userInfo(from: try JSONValue.text(of: $0)) }
        let center = try center(options, command: "post")
        let report: PostReport
        do {
            report = try center.postReporting(
                name: Notification.Name(name), object: options["object"], userInfo: userInfo, retain: options.has("retain"))
        } catch let error as WormholeError where [.invalidNotification, .unsupportedValue, .payloadTooLarge].contains(error.code) {
            // The name, object or userInfo typed cannot be posted: a mistake in the command line.
            throw UsageError("\(error)")
        }
        Output.line("posted \(name): \(report)")
        return report.failures.isEmpty ? 0 : 1
    }

    /// Prints the retained notification of `--name` as one JSON line (exits 1 when there is none), forgets it, or
    /// with `--list` prints the names that have one.
    static func retained(_ arguments: ArraySlice<String>) throws -> Int32 {
        // No --json: what it prints is JSON always, as listen's lines are; --json is for status, whose default
        // output is text for people.
        let options = try Options(arguments, options: containerOptions.union(["name"]), flags: ["clear", "list"])
        if options.has("list") {
            if options["name"] != nil || options.has("clear") { throw UsageError("--list takes no --name or --clear") }
            let center = try center(options, command: "retained", existing: true)
            return try list(center, "retained") { try $0.retainedNotificationListing() }
        }
        guard let name = options["name"] else { throw UsageError("retained needs --name, or --list") }
        let center = try center(options, command: "retained", existing: true)
        if options.has("clear") {
            center.clearRetainedNotification(named: Notification.Name(name))
            return 0
        }
        guard let note = center.retainedNotification(named: Notification.Name(name)) else {
            Output.error("wormhole: no retained notification named \(name)")
            return 1
        }
        Output.line(JSONValue.line(for: note))
        return 0
    }

    /// Prints the current value of the group value `--name` as JSON (`null` when nobody set it), sets it, or
    /// resets it.
    static func value(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions.union(["name", "set", "type"]), flags: ["reset", "create", "list"])
        if options.has("list") {
            if options["name"] != nil || options["set"] != nil || options["type"] != nil || options.has("reset") {
                throw UsageError("--list takes no --name, --set, --type or --reset")
            }
            let center = try center(options, command: "value", existing: !options.has("create"))
            return try list(center, "values") { try $0.groupValueListing() }
        }
        guard let name = options["name"] else { throw UsageError("value needs --name, or --list") }
        if options["set"] != nil && options.has("reset") { throw UsageError("give --set or --reset, not both") }
        if options["type"] != nil && options["set"] == nil { throw UsageError("--type goes with --set") }
        // Read before the container is opened: a mistake in --set leaves nothing behind, not even a new container.
        // nil for --set null, which resets the value as --reset does.
        var newValue: AnyValue?
        if let text = options["set"] { newValue = try AnyValue.argument(text, type: options["type"]) }
        let writes = options["set"] != nil || options.has("reset")
        let center = try center(options, command: "value", existing: !writes && !options.has("create"))
        let value = GroupValue<AnyValue?>(name, default: nil, in: center)
        if options.has("reset") || (writes && newValue == nil) {
            try value.reset()
            return 0
        }
        if let newValue {
            do {
                try value.set(newValue)
            } catch let error as WormholeError where error.code == .unsupportedValue || error.code == .payloadTooLarge {
                throw UsageError("\(error)")
            }
            return 0
        }
        // A stored value that is damaged (no whole version near the newest) or that no AnyValue decodes (of a
        // later format) reads as the default, nil, in an app: that is not an unset value, and printing null would
        // say it is. Here it is a failure that says why, and nothing is printed.
        let current = try readable(value)
        Output.line((current ?? .null).json.text)
        return 0
    }

    /// The value `value` holds: nil when unset.
    /// - Throws: A ``ToolFailure`` that says why, for a stored value that is damaged or that this version cannot
    ///   read; a system error when the container cannot be read.
    private static func readable(_ value: GroupValue<AnyValue?>) throws -> AnyValue? {
        // Read through a function that throws any Error: a do-catch of the typed error here crashes the Swift
        // 6.3.1 compiler (in MandatoryAllocBoxToStack).
        func read() throws -> AnyValue? { try value.readValue() }
        do {
            return try read()
        } catch let error as WormholeError where error.code == .corruptData {
            throw ToolFailure("the stored value of \(value.name) cannot be read, nothing printed: \(error)")
        }
    }

    /// Prints what `listing` finds in the container's `folder` as one JSON line,
    /// `{"container":…,"names":[…],"skipped":N}`: the names sorted by their UTF-8 bytes, and how many entries were
    /// skipped as not what Wormhole writes there or damaged, each said on standard error with why. Exit status 0
    /// whether or not some were skipped; a folder that cannot be listed throws (exit status 1).
    private static func list(
        _ center: GroupNotificationCenter, _ folder: String,
        _ listing: (GroupNotificationCenter) throws -> (names: [String], skipped: [(entry: String, reason: String)])
    ) throws -> Int32 {
        let found = try listing(center)
        // Said one a line, the first hundred: a folder may hold up to 100,000 planted entries.
        for (entry, reason) in found.skipped.prefix(100) { Output.error("wormhole: skipped \(folder)/\(entry): \(reason)") }
        if found.skipped.count > 100 { Output.error("wormhole: skipped \(found.skipped.count - 100) more in \(folder)/") }
        Output.line(JSONValue.object([
            "container": .string(center.containerURL.path), "names": .array(found.names.map(JSONValue.string)),
            "skipped": .integer(Int64(found.skipped.count)),
        ]).text)
        return 0
    }

    /// Forgets a durable identity and its spool; refused while a process runs it.
    static func forget(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions.union(["client"]))
        guard let client = options["client"] else { throw UsageError("forget needs --client") }
        let center = try center(options, command: "forget", existing: true)
        guard try center.forgetDurableIdentity(client) else {
            Output.error("wormhole: no durable identity \"\(client)\"")
            return 1
        }
        Output.line("forgot \"\(client)\" and its spool")
        return 0
    }

    /// Lists every registered listener.
    static func status(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions, flags: ["json", "no-clean"])
        let center = try center(options, command: "status", existing: true)
        // Listeners that are gone are removed, as the next post would; never a durable, stopped or busy one.
        let removed = options.has("no-clean") ? 0 : center.removeGoneListeners()
        let listeners = center.listenerStatus()
        if options.has("json") {
            func text(_ string: String?) -> JSONValue { string.map(JSONValue.string) ?? .null }
            let rows = listeners.map { listener -> JSONValue in
                .object([
                    "identifier": .string(listener.identifier), "pid": .integer(Int64(listener.pid)),
                    "socket": .string(listener.socketPath), "transport": .string(listener.transport.rawValue),
                    "clientIdentifier": text(listener.clientIdentifier),
                    "lastSeen": text(listener.lastSeen.map { ISO8601DateFormatter().string(from: $0) }),
                    "state": .string(listener.state.rawValue),
                    "spooledNotifications": .integer(Int64(listener.spooledNotifications)),
                    "spooledBytes": .integer(Int64(listener.spooledBytes)),
                    "observing": .array(listener.observing.map { .object(["name": text($0.name), "object": text($0.object)]) }),
                ])
            }
            Output.line(JSONValue.object([
                "container": .string(center.containerURL.path), "listeners": .array(rows), "removed": .integer(Int64(removed)),
            ]).text)
            return 0
        }
        Output.line("container \(center.containerURL.path): \(listeners.count) listener(s)"
            + (removed > 0 ? "; removed \(removed) gone" : ""))
        for listener in listeners {
            // Every name or object shows as *; a name or object that is literally "*" shows quoted.
            func shown(_ text: String?) -> String { text.map { $0 == "*" ? "\"*\"" : $0 } ?? "*" }
            let observing = listener.observing.map { "\(shown($0.name))/\(shown($0.object))" }.joined(separator: ", ")
            let lastSeen = listener.lastSeen.map { " last seen \(ISO8601DateFormatter().string(from: $0))" } ?? ""
            let durable = listener.clientIdentifier.map { "durable \"\($0)\"\(lastSeen)  " } ?? ""
            Output.line(
                "  \(durable)pid \(listener.pid)  \(listener.state.rawValue)  spool \(listener.spooledNotifications) (\(listener.spooledBytes) B)  observes \(observing.isEmpty ? "nothing" : observing)")
            Output.line("    \(listener.socketPath) (\(listener.transport))")
        }
        return 0
    }
}

/// Writes whole lines straight to the file descriptors, so that a reader sees each line as soon as it exists.
enum Output {
    /// Writes `text` as a line on standard output; false when it could not be written whole (its reader went).
    @discardableResult
    static func line(_ text: String) -> Bool { write(1, Escaping.forDisplay(text) + "\n") }
    static func error(_ text: String) { write(2, Escaping.forDisplay(text) + "\n") }
    /// The tool's own text (its usage), which may span lines: not escaped.
    static func ownText(_ text: String, toError: Bool = false) { write(toError ? 2 : 1, text + "\n") }

    @discardableResult
    private static func write(_ fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in Foundation.write(fd, raw.baseAddress.map { $0 + done }, raw.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}

/// A thread-safe count.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
}
