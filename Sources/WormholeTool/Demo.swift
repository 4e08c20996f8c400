import Foundation
import Synchronization
import Wormhole

/// `wormhole demo`: an "app" (this process) and an "extension" (a child process) on a temporary container.
enum Demo {
    static let save = Notification.Name("app.didSave")
    static let quit = Notification.Name("app.quit")
    static let ready = Notification.Name("extension.ready")
    static let update = Notification.Name("extension.didUpdate")
    static let status = Notification.Name("app.status")

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        _ = try Options(arguments, options: [])
        let container = try makeTemporaryContainer()
        defer { try? FolderTree.remove(atPath: container) }
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        say("app", "container \(container)")

        let replies = Mailbox()
        center.addObserver(forName: ready, object: nil, queue: nil) { _ in replies.put(0) }
        center.addObserver(forName: update, object: nil, queue: nil) { note in
            let revision = note.userInfo?["revision"] as? Int ?? -1
            say("app", "got \(note.name.rawValue) from the extension: it has revision \(revision)")
            replies.put(revision)
        }

        let child = Process()
        child.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["demo-extension", "--container", container]
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }
        guard replies.take(timeout: 10) == 0 else { return fail("the extension did not start") }
        say("app", "extension (pid \(child.processIdentifier)) is observing \(save.rawValue)")

        try post(center, revision: 1)
        guard replies.take(timeout: 5) == 1 else { return fail("no reply to revision 1") }

        kill(child.processIdentifier, SIGSTOP)
        guard waitUntilStopped(child.processIdentifier) else { return fail("the extension did not stop") }
        say("app", "extension suspended (SIGSTOP); posting revisions 2 to 4, the last with a 256 KiB attachment")
        say("app", "small posts wait in the extension's socket buffer; the large one too, as a shared memory file (its spool where the system has none)")
        try post(center, revision: 2)
        try post(center, revision: 3)
        try post(center, revision: 4, attachment: Data(repeating: 0xAB, count: 256 * 1024))
        Thread.sleep(forTimeInterval: 1)
        say("app", "extension resumed (SIGCONT)")
        kill(child.processIdentifier, SIGCONT)
        for expected in 2...4 {
            guard replies.take(timeout: 5) == expected else { return fail("revision \(expected) did not arrive in order") }
        }

        center.post(name: quit, object: "app")
        child.waitUntilExit()
        say("app", "4 notifications with payloads crossed to the extension and 4 replies came back, in order")

        // A widget that starts only after the app has posted still gets the app's latest status.
        try center.postReporting(name: status, object: "app", userInfo: ["summary": "Notes.txt at revision 4"], retain: true)
        say("app", "posted \(status.rawValue) with retain: true while no widget runs")
        // A value both share, as UserDefaults(suiteName:) would hold it, but updated atomically and seen at once.
        let unread = GroupValue("unread", default: 0, in: center)
        try unread.update { $0 += 3 }
        say("app", "unread is \(unread.value) (GroupValue, updated atomically)")
        let widget = Process()
        widget.executableURL = child.executableURL
        widget.arguments = ["demo-extension", "--container", container, "--widget"]
        try widget.run()
        widget.waitUntilExit()
        guard widget.terminationStatus == 0 else { return fail("the widget did not get the retained status and the value") }
        guard unread.value == 2 else { return fail("the app does not see the widget's update of unread") }
        say("app", "unread is \(unread.value): the widget's update is seen here at once")
        say("app", "done")
        return 0
    }

    /// The extension's side: observe saves, reply to each, leave when the app says so.
    static func runExtension(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(arguments, options: ["container"], flags: ["widget"])
        guard let container = options["container"] else { throw UsageError("demo-extension needs --container") }
        let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: container))
        if options.has("widget") {
            let shown = Mailbox()
            center.addObserver(forName: status, object: nil, includingRetained: true, queue: nil) { note in
                say("widget", "started after the app posted, and shows at once: \(note.userInfo?["summary"] as? String ?? "?")")
                shown.put(1)
            }
            guard shown.take(timeout: 5) == 1 else { exit(1) }
            let unread = GroupValue("unread", default: 0, in: center)
            let before = unread.value
            try unread.update { $0 -= 1 }
            say("widget", "unread was \(before); the widget marked one read")
            exit(before == 3 ? 0 : 1)
        }
        center.addObserver(forName: save, object: "app", queue: nil) { note in
            let info = note.userInfo ?? [:]
            let revision = info["revision"] as? Int ?? -1
            let tags = (info["tags"] as? [String])?.joined(separator: ", ") ?? ""
            var line = "got \(note.name.rawValue): \(info["document"] as? String ?? "?") revision \(revision), tags [\(tags)]"
            if let attachment = info["attachment"] as? Data { line += ", attachment of \(attachment.count) bytes" }
            say("extension", line)
            center.post(name: update, object: "extension", userInfo: ["revision": revision])
        }
        center.addObserver(forName: quit, object: nil, queue: nil) { _ in exit(0) }
        center.post(name: ready, object: "extension")
        // Leave by ourselves should the app vanish.
        Thread.sleep(forTimeInterval: 60)
        exit(1)
    }

    private static func post(_ center: GroupNotificationCenter, revision: Int, attachment: Data? = nil) throws {
        var userInfo: [AnyHashable: Any] = [
            "document": "Notes.txt", "revision": revision, "tags": ["draft", "shared"], "savedAt": Date(),
        ]
        userInfo["attachment"] = attachment
        let report = try center.postReporting(name: save, object: "app", userInfo: userInfo)
        say("app", "posted revision \(revision): \(report)")
    }

    /// Waits until the system reports `pid` stopped, for at most two seconds: `kill` only queues the signal.
    /// Where the system does not tell a stopped process from a running one, a fifth of a second.
    private static func waitUntilStopped(_ pid: Int32) -> Bool {
        guard ProcessState.tellsStopped else {
            Thread.sleep(forTimeInterval: 0.2)
            return true
        }
        for _ in 0..<200 {
            if ProcessState.of(pid) == .stopped { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    private static func makeTemporaryContainer() throws -> String {
        let folder = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((folder + "wormhole-demo-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw UsageError("cannot create a temporary folder") }
        return String(cString: made)
    }

    private static func say(_ who: String, _ text: String) {
        Output.line("[\(who)] \(text)")
    }

    private static func fail(_ reason: String) -> Int32 {
        Output.error("wormhole demo failed: \(reason)")
        return 1
    }
}

/// Values handed from observer blocks to the demo's main thread, with a bounded wait.
final class Mailbox: Sendable {
    private let items = Mutex<[Int]>([])
    private let available = DispatchSemaphore(value: 0)

    func put(_ item: Int) {
        items.withLock { $0.append(item) }
        available.signal()
    }

    func take(timeout seconds: Double) -> Int? {
        guard available.wait(timeout: .now() + seconds) == .success else { return nil }
        return items.withLock { $0.removeFirst() }
    }
}
