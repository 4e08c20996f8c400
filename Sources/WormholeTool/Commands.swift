import Foundation
import Synchronization
import Wormhole

/// The commands: `listen`, `post`, `retained`, `value`, `forget` and `status` here, `request` and `respond` beside.
enum Commands {
    static let containerOptions: Set<String> = ["group", "container"]

    /// The center of the container the command line or the environment names (``ContainerChoice``); durable as
    /// `--client ID` when given. With `existing`, for commands that only read, the container must exist already:
    /// nothing is created. Otherwise a folder that does not exist is made only with `--create`, so that a
    /// mistyped path or group is an error rather than a new empty container nobody listens in; an existing folder
    /// is used as it is. For a container given as a path, `--create` makes the missing folders above it too, each
    /// mode 0700, and says each on standard error.
    /// - Throws: A ``UsageError`` (exit status 2) when the command line names no container, one that does not
    ///   exist, or a path or group the library refuses as a container; what the library throws otherwise.
    static func center(_ options: Options, command: String, existing: Bool = false) throws -> GroupNotificationCenter {
        let choice = try ContainerChoice(options)
        let url: URL
        do {
            switch choice.place {
            case .group(let group): url = try GroupNotificationCenter.defaultContainerURL(groupIdentifier: group)
            case .path(let path): url = URL(fileURLWithPath: path)
            }
            let from = choice.source.hasPrefix("--") ? "" : " (from \(choice.source))"
            if !options.has("create") && !FileManager.default.fileExists(atPath: url.path) {
                // Only post, listen and value make a container; the others are told where to look instead.
                let hint = ["post", "listen", "value", "respond", "bridge"].contains(command)
                    ? "pass --create to make it" : "\(command) never makes one (post, listen, value and respond do, with --create)"
                throw UsageError("container \(url.path)\(from) does not exist; \(hint)")
            }
            if existing { return try GroupNotificationCenter(existingContainerURL: url) }
            if case .group(let group) = choice.place {
                if let client = options["client"] { return try GroupNotificationCenter(groupIdentifier: group, clientIdentifier: client) }
                return try GroupNotificationCenter(groupIdentifier: group)
            }
            if options.has("create") { try ContainerChoice.makeFolders(url.path) }
            return try GroupNotificationCenter(containerURL: url, clientIdentifier: options["client"])
        } catch let error as WormholeError where error.code == .invalidNotification || isMistake(error, choice.path) {
            throw UsageError("\(error)")
        }
    }

    /// Whether the library refused the container the command line names for what the command line says, not
    /// for what the system said: a group that names no folder, a path that is no folder, a folder this process
    /// can look into that holds no container. A folder it may not enter, or any error with an errno, is a
    /// failure (exit status 1), as for a post into another user's container.
    private static func isMistake(_ error: WormholeError, _ path: String?) -> Bool {
        guard error.code == .invalidContainer, error.errno == nil else { return false }
        guard let path else { return true }
        var isFolder: ObjCBool = false
        return !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) || !isFolder.boolValue
            || FileManager.default.isExecutableFile(atPath: path)
    }

    /// Prints each notification as a JSON line; exits after `--count` of them. Without a name, leaves out the
    /// library's own notifications (``LibraryNames``) unless `--all`.
    static func listen(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "object", "count", "client"]), flags: ["create", "all"],
            positionals: 1)
        let name = try options.name(for: "listen", required: false)
        let limit = try options.integer("count")
        let consumer = Consumer(center: try center(options, command: "listen"), limit: limit)
        if limit == 0 { exit(0) }
        let path = consumer.center?.containerURL.path ?? ""
        // Without a name, the library's own traffic (group values' announcements: the only reserved names every
        // name matches) is left out, and not counted, unless --all.
        let hidesLibraryNames = name == nil && !options.has("all")
        // Printed on a queue of its own, one at a time: a notification counts as taken once printed, and what
        // waits when the command stops goes back to a durable identity's spool.
        consumer.center?.addObserver(
            forName: name.map { Notification.Name($0) }, object: options["object"], queue: consumer.queue
        ) { note in
            if hidesLibraryNames && LibraryNames.contains(note.name.rawValue) { return }
            guard let count = consumer.take() else { return }
            // A reader that went: the command stops, and gives back what it did not print.
            guard Output.line(JSONValue.line(for: note)) else { return consumer.stop() }
            if consumer.isLast(count) { consumer.stop() }
        }
        consumer.run(saying: "wormhole: listening in \(path) (pid \(getpid()))")
    }

    /// Posts one notification and prints what was delivered and spooled: a line of text, or with `--json` one
    /// JSON line, `{"container":…,"delivered":1,"failures":[{"code":…,"error":…,"pid":…}],"name":…,"object":…,
    /// "removed":0,"spooled":0}`. Exit status 1 when some listener will not get it.
    static func post(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "object", "user-info"]), flags: ["retain", "create", "json"],
            positionals: 1)
        let name = try options.name(for: "post", required: true) ?? ""
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
        if options.has("json") {
            Output.line(JSONValue.object([
                "container": .string(center.containerURL.path), "name": .string(name),
                "object": options["object"].map(JSONValue.string) ?? .null,
                "delivered": .integer(Int64(report.delivered)), "spooled": .integer(Int64(report.spooled)),
                "removed": .integer(Int64(report.removedDeadListeners)),
                "failures": .array(report.failures.map { failure in
                    .object([
                        "pid": .integer(Int64(failure.pid)), "code": .string(failure.error.code.description),
                        "error": .string(failure.error.description),
                    ])
                }),
            ]).text)
        } else {
            Output.line("posted \(name): \(report)")
        }
        return report.failures.isEmpty ? 0 : 1
    }

    /// Prints the retained notification of the name (`NAME` or `--name`) as one JSON line (exits 1 when there is
    /// none), forgets it, or with `--list` prints the names that have one.
    static func retained(_ arguments: ArraySlice<String>) throws -> Int32 {
        // No --json: what it prints is JSON always, as listen's lines are; --json is for status and post, whose
        // default output is text for people.
        let options = try Options(arguments, options: containerOptions.union(["name"]), flags: ["clear", "list"], positionals: 1)
        if options.has("list") {
            if try options.name(for: "retained", required: false) != nil || options.has("clear") {
                throw UsageError("--list takes no --name or --clear")
            }
            let center = try center(options, command: "retained", existing: true)
            return try list(center, "retained") { try $0.retainedNotificationListing() }
        }
        guard let name = try options.name(for: "retained", required: false) else {
            throw UsageError("retained needs --name NAME (or the name alone: wormhole retained NAME), or --list")
        }
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

    /// Prints the current value of the group value named (`NAME` or `--name`) as JSON (`null` when nobody set
    /// it), sets it, or resets it.
    static func value(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(
            arguments, options: containerOptions.union(["name", "set", "type"]), flags: ["reset", "create", "list"], positionals: 1)
        let givenName = try options.name(for: "value", required: false)
        if options.has("list") {
            if givenName != nil || options["set"] != nil || options["type"] != nil || options.has("reset") {
                throw UsageError("--list takes no --name, --set, --type or --reset")
            }
            let center = try center(options, command: "value", existing: !options.has("create"))
            return try list(center, "values") { try $0.groupValueListing() }
        }
        guard let name = givenName else {
            throw UsageError("value needs --name NAME (or the name alone: wormhole value NAME), or --list")
        }
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

    /// Lists every registered listener. Only reads, unless `--clean`: then it first removes the entries of the
    /// listeners that are gone, as the next post would (never a durable, stopped or busy one). `--no-clean`, which
    /// asked for that before reading was the default, is taken and changes nothing. The library's own names
    /// (``LibraryNames``) are left out of what each listener observes unless `--all`.
    static func status(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options(arguments, options: containerOptions, flags: ["json", "clean", "no-clean", "all"])
        if options.has("clean") && options.has("no-clean") { throw UsageError("give --clean or --no-clean, not both") }
        let center = try center(options, command: "status", existing: true)
        let removed = options.has("clean") ? center.removeGoneListeners() : 0
        let listeners = center.listenerStatus()
        let all = options.has("all")
        /// What a listener observes as shown, and how many of its subscriptions were left out.
        func observing(_ listener: ListenerStatus) -> (shown: [(name: String?, object: String?)], hidden: Int) {
            let shown = all
                ? listener.observing : listener.observing.filter { !($0.name.map(LibraryNames.contains) ?? false) }
            return (shown, listener.observing.count - shown.count)
        }
        if options.has("json") {
            func text(_ string: String?) -> JSONValue { string.map(JSONValue.string) ?? .null }
            let rows = listeners.map { listener -> JSONValue in
                let (shown, hidden) = observing(listener)
                return .object([
                    "identifier": .string(listener.identifier), "pid": .integer(Int64(listener.pid)),
                    "socket": .string(listener.socketPath), "transport": .string(listener.transport.rawValue),
                    "clientIdentifier": text(listener.clientIdentifier),
                    "lastSeen": text(listener.lastSeen.map { ISO8601DateFormatter().string(from: $0) }),
                    "state": .string(listener.state.rawValue),
                    "spooledNotifications": .integer(Int64(listener.spooledNotifications)),
                    "spooledBytes": .integer(Int64(listener.spooledBytes)),
                    "observing": .array(shown.map { .object(["name": text($0.name), "object": text($0.object)]) }),
                    "hidden": .integer(Int64(hidden)),
                ])
            }
            Output.line(JSONValue.object([
                "container": .string(center.containerURL.path), "listeners": .array(rows), "removed": .integer(Int64(removed)),
            ]).text)
            return 0
        }
        let gone = listeners.filter { $0.state == .dead }.count
        Output.line("container \(center.containerURL.path): \(listeners.count) listener(s)"
            + (removed > 0 ? "; removed \(removed) gone" : "")
            + (gone > 0 ? "; \(gone) gone (status --clean removes \(gone == 1 ? "it" : "them"))" : ""))
        for listener in listeners {
            // Every name or object shows as *; a name or object that is literally "*" shows quoted.
            func shown(_ text: String?) -> String { text.map { $0 == "*" ? "\"*\"" : $0 } ?? "*" }
            let (visible, hidden) = observing(listener)
            var observes = visible.map { "\(shown($0.name))/\(shown($0.object))" }.joined(separator: ", ")
            if observes.isEmpty { observes = "nothing" }
            if hidden > 0 { observes += " (and \(hidden) of the library's own names: --all shows them)" }
            let lastSeen = listener.lastSeen.map { " last seen \(ISO8601DateFormatter().string(from: $0))" } ?? ""
            let durable = listener.clientIdentifier.map { "durable \"\($0)\"\(lastSeen)  " } ?? ""
            Output.line(
                "  \(durable)pid \(listener.pid)  \(listener.state.rawValue)  spool \(listener.spooledNotifications) (\(listener.spooledBytes) B)  observes \(observes)")
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
