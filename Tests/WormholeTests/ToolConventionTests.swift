import Foundation
import Testing
@testable import Wormhole
@testable import WormholeTool

/// The `wormhole` tool's command line as `notifyutil`, `git` and `busctl` users expect it: a name given alone,
/// the container from the environment, `--create` that makes the folders above, a `status` that only reads,
/// the library's own names left out, `post --json`, suggestions for typos, and short options.
@Suite("The wormhole tool's conventions", .throttled)
struct ToolConventionTests {
    /// The container variables unset (set to nothing), so that the environment the tests run in changes nothing.
    static let neutral = [ContainerChoice.containerVariable: "", ContainerChoice.groupVariable: ""]

    /// Runs the tool to its end.
    @discardableResult
    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, peer: Peer) {
        let peer = try Peer("wormhole", arguments, environment: Self.neutral.merging(environment) { $1 })
        return (try await peer.awaitExit(), peer)
    }

    func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Peer {
        try Peer("wormhole", arguments, environment: Self.neutral.merging(environment) { $1 })
    }

    @Test("a name given alone is the name for post, listen, value, retained, request and respond; given twice it must agree")
    func positionalName() async throws {
        let container = TemporaryContainer()
        let at = ["--container", container.path]
        let listener = try start(["listen", "greet", "--count", "1"] + at)
        try await listener.awaitError(containing: "listening")
        let posted = try await run(["post", "greet", "--retain"] + at)
        #expect(posted.status == 0, "\(posted.peer.errorOutput)")
        #expect(posted.peer.output == ["posted greet: delivered 1, spooled 0"])
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().first?["name"] as? String == "greet")
        let retained = try await run(["retained", "greet"] + at)
        #expect(retained.status == 0 && retained.peer.jsonLines().first?["name"] as? String == "greet", "\(retained.peer.errorOutput)")

        #expect(try await run(["value", "count", "--set", "5"] + at).status == 0)
        let value = try await run(["value", "count"] + at)
        #expect(value.status == 0 && value.peer.output == ["5"], "\(value.peer.output) \(value.peer.errorOutput)")
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("count", default: 0, in: center).value == 5)

        let responder = try start(["respond", "ask", "--reply", #"{"answer": 42}"#, "--count", "1"] + at)
        try await responder.awaitError(containing: "responding")
        let asked = try await run(["request", "ask", "--timeout", "20"] + at)
        #expect(asked.status == 0, "\(asked.peer.errorOutput)")
        #expect((asked.peer.jsonLines().first?["userInfo"] as? [String: Int]) == ["answer": 42])
        #expect(try await responder.awaitExit() == 0)
        #expect(responder.jsonLines().first?["name"] as? String == "ask")

        // Both ways at once: only alike. After --, a name may start with -.
        let same = try await run(["post", "n", "--name", "n"] + at)
        #expect(same.status == 0 && same.peer.output == ["posted n: delivered 0, spooled 0"])
        let dashed = try await run(["post"] + at + ["--", "-odd"])
        #expect(dashed.status == 0 && dashed.peer.output == ["posted -odd: delivered 0, spooled 0"], "\(dashed.peer.errorOutput)")
        let mistakes: [([String], String)] = [
            (["post", "a", "--name", "b"], "the name is given twice, 'a' and --name 'b'"),
            (["listen", "a", "--name=b"], "the name is given twice"),
            (["value", "a", "--name", "b"], "the name is given twice"),
            (["request", "a", "--name", "b"], "the name is given twice"),
            (["respond", "a", "--name", "b"], "the name is given twice"),
            (["post", "a", "b"], "unexpected argument 'b'"),
            (["status", "a"], "unexpected argument 'a'"),
            (["post"], "post needs --name NAME, or the name alone: wormhole post NAME"),
            (["value", "v", "--list"], "--list takes no --name"),
            (["post", ""], "the name is empty"),
        ]
        for (arguments, expected) in mistakes {
            let peer = try await run(arguments + at)
            #expect(peer.status == 2, "\(arguments)")
            #expect(peer.peer.errorOutput.count == 1 && peer.peer.errorOutput.first?.contains(expected) == true,
                    "\(arguments): \(peer.peer.errorOutput)")
            #expect(peer.peer.output.isEmpty)
        }
    }

    @Test("without --container or --group, WORMHOLE_CONTAINER or WORMHOLE_GROUP names the container; an option wins")
    func containerFromEnvironment() async throws {
        let container = TemporaryContainer()
        let other = TemporaryContainer()
        let byPath = [ContainerChoice.containerVariable: container.path]
        let listener = try start(["listen", "--name", "e", "--count", "1"], environment: byPath)
        try await listener.awaitError(containing: "listening in \(container.path)")
        // The option names another container, where nobody listens: the listener is not reached.
        let elsewhere = try await run(["post", "--name", "e", "--container", other.path], environment: byPath)
        #expect(elsewhere.status == 0 && elsewhere.peer.output == ["posted e: delivered 0, spooled 0"], "\(elsewhere.peer.errorOutput)")
        let here = try await run(["post", "--name", "e"], environment: byPath)
        #expect(here.status == 0 && here.peer.output == ["posted e: delivered 1, spooled 0"], "\(here.peer.errorOutput)")
        #expect(try await listener.awaitExit() == 0)

        // A group, with the library's root for group containers pointed at a temporary folder.
        let root = TemporaryContainer()
        let byGroup = [ContainerChoice.groupVariable: "group.test.conventions", "WORMHOLE_CONTAINER_ROOT": root.path]
        let missing = try await run(["status"], environment: byGroup)
        #expect(missing.status == 2)
        #expect(missing.peer.errorOutput.first?.contains("(from WORMHOLE_GROUP) does not exist") == true, "\(missing.peer.errorOutput)")
        #expect(try await run(["post", "--name", "g", "--create"], environment: byGroup).status == 0)
        #expect(FileManager.default.fileExists(atPath: root.path + "/group.test.conventions/registry"))
        let status = try await run(["status"], environment: byGroup)
        #expect(status.status == 0 && status.peer.output.first?.hasPrefix("container \(root.path)/group.test.conventions:") == true,
                "\(status.peer.output) \(status.peer.errorOutput)")
        // Both variables: the option decides; without one, a mistake.
        let both = byGroup.merging(byPath) { $1 }
        let decided = try await run(["status", "--container", other.path], environment: both)
        #expect(decided.status == 0 && decided.peer.output.first?.hasPrefix("container \(other.path):") == true, "\(decided.peer.errorOutput)")
        let undecided = try await run(["status"], environment: both)
        #expect(undecided.status == 2)
        #expect(undecided.peer.errorOutput.first?.contains("WORMHOLE_CONTAINER and WORMHOLE_GROUP are both set") == true)
        let none = try await run(["status"])
        #expect(none.status == 2)
        #expect(none.peer.errorOutput.first?.contains("give --group ID or --container DIR (or set WORMHOLE_GROUP or WORMHOLE_CONTAINER)") == true,
                "\(none.peer.errorOutput)")
        // Help says so.
        for command in ["post", "listen", "status", "value", "request", "respond", "retained", "forget"] {
            let help = try await run([command, "--help"])
            #expect(help.peer.output.contains { $0.contains("WORMHOLE_CONTAINER") && $0.contains("WORMHOLE_GROUP") }, "\(command)")
        }
    }

    @Test("--create makes the missing folders above a container, each 0700, saying each on standard error")
    func createMakesParents() async throws {
        let parent = TemporaryContainer()
        let target = parent.path + "/a/b/c"
        let refused = try await run(["post", "--name", "x", "--container", target])
        #expect(refused.status == 2 && !FileManager.default.fileExists(atPath: parent.path + "/a"))
        let made = try await run(["post", "--name", "x", "--container", target, "--create"])
        #expect(made.status == 0, "\(made.peer.errorOutput)")
        #expect(made.peer.errorOutput == ["a", "a/b", "a/b/c"].map { "wormhole: made \(parent.path)/\($0) (0700)" })
        for folder in ["a", "a/b", "a/b/c"] {
            var status = stat()
            #expect(stat(parent.path + "/" + folder, &status) == 0)
            #expect(status.st_mode & 0o7777 == 0o700, "\(folder): \(String(status.st_mode, radix: 8))")
        }
        #expect(FileManager.default.fileExists(atPath: target + "/registry"))
        // Nothing to make the second time: nothing said.
        let again = try await run(["listen", "--container", target, "--create", "--count", "0"])
        #expect(again.status == 0 && again.peer.errorOutput.isEmpty, "\(again.peer.errorOutput)")
        // From the environment as well.
        let fromEnvironment = try await run(["value", "--name", "v", "--set", "1", "--create"],
                                            environment: [ContainerChoice.containerVariable: parent.path + "/d/e"])
        #expect(fromEnvironment.status == 0)
        #expect(fromEnvironment.peer.errorOutput == ["d", "d/e"].map { "wormhole: made \(parent.path)/\($0) (0700)" })
        // A umask that takes the owner's bits: each folder is still 0700, so the next can be made inside it
        // (what the library then makes inside the container is its own affair: the exit status is not looked at).
        let tool = Peer.productsDirectory.appendingPathComponent("wormhole").path
        let masked = try Peer("/bin/sh", ["-c", #"umask 0277; exec "$0" post --name x --container "$1" --create"#,
                                          tool, parent.path + "/m/n"], environment: Self.neutral, absolute: true)
        _ = try await masked.awaitExit()
        #expect(masked.errorOutput.prefix(2) == ["m", "m/n"].map { "wormhole: made \(parent.path)/\($0) (0700)" }[...],
                "\(masked.errorOutput)")
        for folder in ["m", "m/n"] {
            var status = stat()
            #expect(stat(parent.path + "/" + folder, &status) == 0)
            #expect(status.st_mode & 0o7777 == 0o700, "\(folder): \(String(status.st_mode, radix: 8))")
        }
        // A file on the way is a mistake, said once; nothing is made past it.
        _ = FileManager.default.createFile(atPath: parent.path + "/file", contents: Data())
        let throughFile = try await run(["post", "--name", "x", "--container", parent.path + "/file/x/y", "--create"])
        #expect(throughFile.status == 2)
        #expect(throughFile.peer.errorOutput.count == 1 && throughFile.peer.errorOutput.first?.contains("is a file") == true,
                "\(throughFile.peer.errorOutput)")
    }

    @Test("status only reads unless --clean; --no-clean is taken and changes nothing")
    func statusOnlyReads() async throws {
        let container = TemporaryContainer()
        let dead = try start(["listen", "--name", "d", "--container", container.path])
        try await dead.awaitError(containing: "listening")
        dead.signal(SIGKILL)
        _ = try? await dead.awaitExit()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let socket = try #require(center.listenerStatus().first?.socketPath)
        for extra in [[], ["--no-clean"], ["--json"]] {
            let status = try await run(["status", "--container", container.path] + extra)
            #expect(status.status == 0, "\(extra): \(status.peer.errorOutput)")
            #expect(center.listenerStatus().map(\.state) == [.dead], "\(extra)")
            #expect(FileManager.default.fileExists(atPath: socket), "\(extra)")
            if extra == ["--json"] {
                let json = try #require(status.peer.jsonLines().first)
                #expect(json["removed"] as? Int == 0)
                #expect((json["listeners"] as? [[String: Any]])?.first?["state"] as? String == "dead")
            } else {
                #expect(status.peer.output.first?.hasSuffix("1 listener(s); 1 gone (status --clean removes it)") == true,
                        "\(status.peer.output)")
            }
        }
        let conflicting = try await run(["status", "--container", container.path, "--clean", "--no-clean"])
        #expect(conflicting.status == 2 && conflicting.peer.errorOutput.first?.contains("not both") == true)
        let cleaned = try await run(["status", "--container", container.path, "--clean"])
        #expect(cleaned.status == 0)
        #expect(cleaned.peer.output.first?.hasSuffix("0 listener(s); removed 1 gone") == true, "\(cleaned.peer.output)")
        #expect(center.listenerStatus().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test("the library's own names (requests, replies, values, the spool mark) are left out of status and listen unless --all")
    func libraryNamesHidden() async throws {
        let container = TemporaryContainer()
        let at = ["--container", container.path]
        let center = try GroupNotificationCenter(containerURL: container.url)
        // A responder (wormhole.request.job), a value's watcher (wormhole.value.v), a listener that keeps
        // everything spooled (wormhole.spooled, in this process), and below a requester (wormhole.reply.…).
        let responder = try start(["respond", "--name", "job", "--count", "1", "--reply", #"{"ok": true}"#] + at)
        try await responder.awaitError(containing: "responding")
        let watcher = try start(["listen", "--name", GroupValue<Int>.notificationName(for: "v").rawValue, "--count", "1"] + at)
        try await watcher.awaitError(containing: "listening")
        let relay = try GroupNotificationCenter(containerURL: container.url)
        let tokens = relay.addRelayObservers([(name: "plain", block: { _ in })], keepingSpooled: true)
        defer { relay.removeRelayObservers(tokens) }
        try responder.suspend()
        let asker = try start(["request", "--name", "job", "--timeout", "30"] + at)
        try await pollUntil("the requester registered") {
            center.listenerStatus().contains { $0.observing.contains { $0.name?.hasPrefix("wormhole.reply.") == true } }
        }
        let everyName = center.listenerStatus().flatMap(\.observing).compactMap(\.name)
        for name in ["wormhole.request.job", "wormhole.value.v", "wormhole.spooled"] {
            #expect(everyName.contains(name), "\(everyName)")
        }

        let hidden = try await run(["status", "--json"] + at)
        let rows = try #require(hidden.peer.jsonLines().first?["listeners"] as? [[String: Any]])
        let shown = rows.flatMap { ($0["observing"] as? [[String: Any]]) ?? [] }.compactMap { $0["name"] as? String }
        #expect(shown == ["plain"], "\(shown)")
        #expect(rows.compactMap { $0["hidden"] as? Int }.reduce(0, +) == 4, "\(rows)")
        let text = try await run(["status"] + at)
        #expect(text.status == 0 && !text.peer.output.joined().contains("wormhole."), "\(text.peer.output)")
        #expect(text.peer.output.contains { $0.contains("observes nothing (and 1 of the library's own names: --all shows them)") })
        let all = try await run(["status", "--json", "--all"] + at)
        let allRows = try #require(all.peer.jsonLines().first?["listeners"] as? [[String: Any]])
        let allNames = Set(allRows.flatMap { ($0["observing"] as? [[String: Any]]) ?? [] }.compactMap { $0["name"] as? String })
        #expect(allNames.isSuperset(of: ["wormhole.request.job", "wormhole.value.v", "wormhole.spooled", "plain"]), "\(allNames)")
        #expect(allNames.contains { $0.hasPrefix("wormhole.reply.") })
        let allText = try await run(["status", "--all"] + at)
        #expect(allText.peer.output.contains { $0.contains("observes wormhole.request.job/*") }, "\(allText.peer.output)")

        responder.signal(SIGCONT)
        #expect(try await asker.awaitExit() == 0, "\(asker.errorOutput)")
        #expect(try await responder.awaitExit() == 0)

        // listen without a name: a value's announcement is left out (and not counted); with --all, printed.
        let plain = try start(["listen", "--count", "1"] + at)
        try await plain.awaitError(containing: "listening")
        let everything = try start(["listen", "--count", "2", "--all"] + at)
        try await everything.awaitError(containing: "listening")
        try GroupValue("v", default: 0, in: center).set(7)
        center.post(name: .init("after"), object: nil)
        #expect(try await plain.awaitExit() == 0)
        #expect(try await everything.awaitExit() == 0)
        #expect(try await watcher.awaitExit() == 0)
        #expect(plain.jsonLines().compactMap { $0["name"] as? String } == ["after"], "\(plain.output)")
        #expect(everything.jsonLines().compactMap { $0["name"] as? String } == ["wormhole.value.v", "after"], "\(everything.output)")
    }

    @Test("the tool's list of the library's own names agrees with the library's")
    func libraryNamesAgree() {
        for name in [ReservedNames.request("x"), ReservedNames.replyPrefix + "1f", ReservedNames.keepsSpooled,
                     GroupValueName.notification(for: "v")] {
            #expect(LibraryNames.contains(name), "\(name)")
        }
        for name in ["plain", "wormhole.message.x", "wormhole.spooled.not", "wormhole"] {
            #expect(!LibraryNames.contains(name), "\(name)")
            #expect(!ReservedNames.isReserved(name), "\(name)")
        }
    }

    @Test("post --json prints one JSON line of what it delivered; plain post keeps its line of text")
    func postJSON() async throws {
        let container = TemporaryContainer()
        let listener = try start(["listen", "--name", "j", "--count", "1", "--container", container.path])
        try await listener.awaitError(containing: "listening")
        let posted = try await run(["post", "--name", "j", "--object", "o", "--json", "--container", container.path])
        #expect(posted.status == 0, "\(posted.peer.errorOutput)")
        #expect(posted.peer.output.count == 1)
        #expect(posted.peer.output.first == #"{"container":"\#(container.path)","delivered":1,"failures":[],"name":"j","object":"o","removed":0,"spooled":0}"#)
        #expect(try await listener.awaitExit() == 0)
        // A listener that is gone is removed on the way and counted.
        let dead = try start(["listen", "--name", "j", "--container", container.path])
        try await dead.awaitError(containing: "listening")
        dead.signal(SIGKILL)
        _ = try? await dead.awaitExit()
        let again = try await run(["post", "--name", "j", "--json", "--container", container.path])
        let json = try #require(again.peer.jsonLines().first, "\(again.peer.output)")
        #expect(json["removed"] as? Int == 1 && json["delivered"] as? Int == 0 && json["object"] is NSNull)
        #expect((json["failures"] as? [Any])?.isEmpty == true)
        let text = try await run(["post", "--name", "j", "--container", container.path])
        #expect(text.peer.output == ["posted j: delivered 0, spooled 0"])
    }

    @Test("an unknown command or option suggests the nearest one, exit 2")
    func suggestions() async throws {
        let container = TemporaryContainer()
        let at = ["--container", container.path]
        let cases: [([String], String?)] = [
            (["lisen"], "unknown command 'lisen'; did you mean listen? (see 'wormhole help')"),
            (["stauts"], "did you mean status?"),
            (["help", "retaned"], "did you mean retained?"),
            (["frobnicate"], nil),
            (["post", "--name", "x", "--contianer", container.path], "unknown option --contianer; did you mean --container?"),
            (["status", "--cleen"] + at, "did you mean --clean?"),
            (["listen", "--al"] + at, "did you mean --all?"),
            (["post", "--name", "x", "--colour", "red"] + at, nil),
            (["post", "--name", "x", "-container", container.path], "unknown option -container; did you mean --container?"),
        ]
        for (arguments, expected) in cases {
            let peer = try await run(arguments)
            #expect(peer.status == 2, "\(arguments)")
            #expect(peer.peer.errorOutput.count == 1, "\(arguments): \(peer.peer.errorOutput)")
            if let expected {
                #expect(peer.peer.errorOutput.first?.contains(expected) == true, "\(arguments): \(peer.peer.errorOutput)")
            } else {
                #expect(peer.peer.errorOutput.first?.contains("did you mean") == false, "\(arguments): \(peer.peer.errorOutput)")
            }
        }
        #expect(Suggestion.distance(Array("listen"), Array("lsiten")) == 1)
        #expect(Suggestion.distance(Array("kitten"), Array("sitting")) == 3)
        #expect(Suggestion.nearest(to: "valeu", among: ["value", "all"]) == "value")
        #expect(Suggestion.nearest(to: "resond", among: ["respond", "request"]) == "respond")
        #expect(Suggestion.nearest(to: "x", among: ["n"]) == nil)
    }

    @Test("short forms: -c for --container, -g for --group, -n for --count; another command's short form is refused")
    func shortForms() async throws {
        let container = TemporaryContainer()
        let listener = try start(["listen", "--name", "s", "-c", container.path, "-n", "2"])
        try await listener.awaitError(containing: "listening")
        #expect(try await run(["post", "--name", "s", "-c" + container.path]).status == 0)
        #expect(try await run(["post", "--name", "s", "-c", container.path]).status == 0)
        #expect(try await listener.awaitExit() == 0)
        #expect(listener.jsonLines().count == 2)
        let root = TemporaryContainer()
        let grouped = try await run(["post", "--name", "s", "-g", "group.short", "--create"], environment: ["WORMHOLE_CONTAINER_ROOT": root.path])
        #expect(grouped.status == 0, "\(grouped.peer.errorOutput)")
        #expect(FileManager.default.fileExists(atPath: root.path + "/group.short/registry"))
        let refused = try await run(["post", "--name", "s", "-n", "1", "-c", container.path])
        #expect(refused.status == 2 && refused.peer.errorOutput.first?.contains("unknown option -n") == true, "\(refused.peer.errorOutput)")
        let twice = try await run(["post", "--name", "s", "-c", container.path, "--container", container.path])
        #expect(twice.status == 2 && twice.peer.errorOutput.first?.contains("--container is given twice") == true)
        let help = try await run(["help"])
        #expect(help.peer.output.contains { $0.contains("-c for --container, -g for --group, -n for --count") })
    }
}
