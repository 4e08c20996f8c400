import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

@Suite("The wormhole command", .throttled)
struct CommandLineTests {
    @Test("listen prints JSON lines of what post sends; post prints what it delivered")
    func listenAndPost() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "greet", "--count", "1"])
        try await listener.awaitError(containing: "listening")
        let poster = try Peer("wormhole", [
            "post", "--container", container.path, "--name", "greet", "--object", "cli",
            "--user-info", #"{"who": "world", "n": 2, "list": [1, 2], "inner": {"ok": true}}"#,
        ])
        #expect(try await poster.awaitExit() == 0)
        #expect(poster.output.first == "posted greet: delivered 1, spooled 0")
        #expect(try await listener.awaitExit() == 0)
        let line = try #require(listener.jsonLines().first)
        #expect(line["name"] as? String == "greet")
        #expect(line["object"] as? String == "cli")
        let info = try #require(line["userInfo"] as? [String: Any])
        #expect(info["who"] as? String == "world")
        #expect(info["n"] as? Int == 2)
        #expect(info["list"] as? [Int] == [1, 2])
        #expect((info["inner"] as? [String: Any])?["ok"] as? Bool == true)
    }

    @Test("post refuses bad JSON with a clear message and exit status 2; null posts NSNull")
    func badUserInfo() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "n", "--count", "1"])
        try await listener.awaitError(containing: "listening")
        let null = try Peer("wormhole", ["post", "--container", container.path, "--name", "n", "--user-info", #"{"a": null}"#])
        #expect(try await null.awaitExit() == 0)
        #expect(try await listener.awaitExit() == 0)
        #expect((listener.jsonLines().last?["userInfo"] as? [String: Any])?["a"] is NSNull)
        for json in ["[1]", "{not json"] {
            let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "x", "--user-info", json])
            #expect(try await poster.awaitExit() == 2)
            #expect(poster.errorOutput.first?.contains("--user-info") == true)
        }
    }

    @Test("status shows each listener: pid, what it observes, state and spool depth")
    func status() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "s", "--object", "o"])
        try await listener.awaitError(containing: "listening")
        try listener.suspend()
        // Over the 128 KiB that go through the socket: the first is passed to the stopped listener as a shared
        // memory file where the platform can; what would take its unread shared frames past 16 MiB is spooled.
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "s", "--object", "o",
                                                     "--payload", "9000000", "--count", "3"])
        #expect(try await poster.awaitExit(timeout: 60) == 0)
        let spooled = try #require(poster.jsonLines().first?["spooled"] as? Int)
        #expect(spooled == (SharedFrame.isAvailable ? 2 : 3))
        let status = try Peer("wormhole", ["status", "--container", container.path, "--json"])
        #expect(try await status.awaitExit() == 0)
        let json = try #require(status.jsonLines().first)
        let rows = try #require(json["listeners"] as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["pid"] as? Int == Int(listener.pid))
        #expect(rows.first?["state"] as? String == "stopped")
        #expect(rows.first?["spooledNotifications"] as? Int == spooled)
        let observing = rows.first?["observing"] as? [[String: Any]]
        #expect(observing?.first?["name"] as? String == "s" && observing?.first?["object"] as? String == "o")
        listener.signal(SIGCONT)
        let text = try Peer("wormhole", ["status", "--container", container.path])
        #expect(try await text.awaitExit() == 0)
        #expect(text.output.contains { $0.contains("pid \(listener.pid)") })
    }

    @Test("the demo runs by itself and finishes in a few seconds")
    func demo() async throws {
        let demo = try Peer("wormhole", ["demo"])
        #expect(try await demo.awaitExit(timeout: 60) == 0)
        #expect(demo.output.contains { $0.contains("attachment of 262144 bytes") })
        #expect(demo.output.contains { $0.contains("replies came back, in order") })
        #expect(demo.output.contains { $0.hasPrefix("[widget]") && $0.contains("revision 4") })
        #expect(demo.output.last == "[app] done")
    }

    @Test("usage errors exit with status 2 and say what is wrong")
    func usage() async throws {
        let missing = try Peer("wormhole", ["post", "--name", "x"])
        #expect(try await missing.awaitExit() == 2)
        #expect(missing.errorOutput.first?.contains("--group") == true)
        let unknown = try Peer("wormhole", ["frobnicate"])
        #expect(try await unknown.awaitExit() == 2)
    }

    @Test("help: wormhole help COMMAND, COMMAND --help and -h print that command's usage and exit 0; --version")
    func help() async throws {
        for arguments in [["help", "post"], ["post", "--help"], ["post", "-h"], ["post", "--container", "/nowhere", "-h"]] {
            let peer = try Peer("wormhole", arguments)
            #expect(try await peer.awaitExit() == 0, "\(arguments)")
            #expect(peer.output.first?.hasPrefix("usage: wormhole post") == true, "\(arguments): \(peer.output)")
            #expect(peer.errorOutput.isEmpty)
        }
        let all = try Peer("wormhole", ["help"])
        #expect(try await all.awaitExit() == 0)
        #expect(all.output.contains { $0.contains("Exit status: 0 success, 1 failure, 2") })
        let version = try Peer("wormhole", ["--version"])
        #expect(try await version.awaitExit() == 0)
        #expect(version.output.first?.hasPrefix("wormhole ") == true)
    }

    @Test("mistakes are one line naming what was wrong, pointing to --help, with exit status 2")
    func mistakes() async throws {
        let container = TemporaryContainer()
        let fifo = container.path + "/fifo"
        try #require(mkfifo(fifo, 0o600) == 0)
        let cases: [([String], String)] = [
            // A FIFO is refused at once, not waited on.
            (["post", "--container", container.path, "--name", "a", "--user-info", "@" + fifo], "is not a regular file"),
            (["bogus"], "unknown command 'bogus'"),
            (["help", "bogus"], "unknown command 'bogus'"),
            (["post", "--container", container.path, "--name", "--object", "o"], "--name needs a value"),
            (["post", "--container", container.path, "--name", "a", "--name", "b"], "--name is given twice"),
            (["post", "--container", container.path, "--name", "a", "--colour", "red"], "unknown option --colour"),
            (["post", "--container", container.path, "a", "stray"], "unexpected argument 'stray'"),
            (["post", "--container", container.path, "--retain=yes", "--name", "a"], "--retain takes no value"),
            (["post", "--container", container.path, "--name", "a", "--user-info", "{\"a\": 1,\n \"b\": [1,, 2]}"], "line 2, column"),
            (["value", "--container", container.path, "--name", "v", "--set", "x", "--type", "time"], "--type takes date or data"),
        ]
        for (arguments, expected) in cases {
            let peer = try Peer("wormhole", arguments)
            #expect(try await peer.awaitExit() == 2, "\(arguments)")
            #expect(peer.errorOutput.count == 1, "\(arguments): \(peer.errorOutput)")
            #expect(peer.errorOutput.first?.contains(expected) == true, "\(arguments): \(peer.errorOutput)")
            #expect(peer.output.isEmpty)
        }
    }

    @Test("--option=value, --user-info from a file and from standard input, and a name that starts with --")
    func optionForms() async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container=" + container.path, "--name=--odd", "--count=2"])
        try await listener.awaitError(containing: "listening")
        let file = container.path + "/../wormhole-user-info-\(getpid()).json"
        let big = String(repeating: "x", count: 200_000)
        try Data(#"{"text": "\#(big)"}"#.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromFile = try Peer("wormhole", ["post", "--container", container.path, "--name=--odd", "--user-info", "@" + file])
        #expect(try await fromFile.awaitExit() == 0, "\(fromFile.errorOutput)")
        let fromInput = try Peer("/bin/sh", ["-c", #"echo '{"n": 7}' | "$0" post --container "$1" --name=--odd --user-info -"#,
            Peer.productsDirectory.appendingPathComponent("wormhole").path, container.path], absolute: true)
        #expect(try await fromInput.awaitExit() == 0, "\(fromInput.errorOutput)")
        #expect(try await listener.awaitExit() == 0)
        let infos = listener.jsonLines().compactMap { $0["userInfo"] as? [String: Any] }
        #expect((infos.first?["text"] as? String)?.count == 200_000)
        #expect(infos.last?["n"] as? Int == 7)
    }

    @Test("bytes that are not UTF-8 (in a file, on standard input, in an argument), and standard input closed, exit 2")
    func notUTF8() async throws {
        let container = TemporaryContainer()
        let file = container.path + "/../wormhole-latin1-\(getpid()).json"
        // {"a":"é"} saved as Latin-1: 0xE9 begins no UTF-8 character that the quote after it could end.
        try Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xE9, 0x22, 0x7D]).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let tool = Peer.productsDirectory.appendingPathComponent("wormhole").path
        let cases: [(Peer, String)] = [
            (try Peer("wormhole", ["post", "--container", container.path, "--name", "n", "--retain", "--user-info", "@" + file]),
             "\(file) is not UTF-8 text: byte 6"),
            (try Peer("/bin/sh", ["-c", #"printf '{"a":"\351"}' | "$0" post --container "$1" --name n --retain --user-info -"#,
                                  tool, container.path], absolute: true),
             "standard input is not UTF-8 text: byte 6"),
            (try Peer("/bin/sh", ["-c", #""$0" post --container "$1" --name "$(printf 'n\351')" --retain"#, tool, container.path],
                      absolute: true),
             "argument 5 is not UTF-8 text: byte 1"),
            (try Peer("/bin/sh", ["-c", #""$0" value --container "$1" --name v --set "$(printf '"\351"')""#, tool, container.path],
                      absolute: true),
             "argument 7 is not UTF-8 text: byte 1"),
        ]
        for (peer, expected) in cases {
            #expect(try await peer.awaitExit() == 2, "\(peer.errorOutput)")
            #expect(peer.errorOutput.count == 1 && peer.errorOutput.first?.contains(expected) == true, "\(peer.errorOutput)")
        }
        // Standard input that cannot be read: closed, or a folder.
        for redirect in ["<&-", "< /"] {
            let peer = try Peer("/bin/sh", ["-c", #""$0" post --container "$1" --name n --retain --user-info - "# + redirect,
                                            tool, container.path], absolute: true)
            #expect(try await peer.awaitExit() == 2, "\(redirect): \(peer.errorOutput)")
            #expect(peer.errorOutput.count == 1 && peer.errorOutput.first?.contains("cannot read standard input") == true,
                    "\(redirect): \(peer.errorOutput)")
        }
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(center.retainedNotification(named: Notification.Name("n")) == nil)
        #expect(center.retainedNotification(named: Notification.Name("n\u{FFFD}")) == nil)
        #expect(GroupValue<String?>("v", default: nil, in: center).value == nil)
    }

    @Test("a dictionary whose keys print alike (1 and \"1\") shows every entry, as [key, value] pairs in one order")
    func keysThatPrintAlike() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let userInfo: [AnyHashable: Any] = ["keys": [1: "number", "1": "string", 2: "two"] as [AnyHashable: Any], "plain": [3: "c"]]
        _ = try center.postReporting(name: .init("n"), object: nil, userInfo: userInfo, retain: true)
        for _ in 0..<3 {
            let reader = try Peer("wormhole", ["retained", "--container", container.path, "--name", "n"])
            #expect(try await reader.awaitExit() == 0)
            #expect(reader.output == [
                #"{"name":"n","object":null,"userInfo":{"keys":[["1","string"],[1,"number"],[2,"two"]],"plain":{"3":"c"}}}"#,
            ])
        }
    }

    @Test("value of a stored value this version cannot read (a later format) fails with status 1 rather than print null")
    func valueUnreadable() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let archive = try UserInfoCodec.encode(["value": 5, "version": 1, "format": 3], maximumSize: Limits.maximumPayloadSize)
        let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: "later"), object: nil, userInfo: archive)
        #expect(try ValueStore(container: center.endpoint.container, name: "later").publish(frame.encoded(), version: 1))
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "later"])
        #expect(try await reader.awaitExit() == 1)
        #expect(reader.output.isEmpty, "\(reader.output)")
        #expect(reader.errorOutput.last?.contains("cannot be read, nothing printed") == true, "\(reader.errorOutput)")
        #expect(reader.errorOutput.last?.contains("stored in format 3, which this version does not read") == true, "\(reader.errorOutput)")
        // A value it can read still prints, also null for one never set.
        for (name, printed) in [("unset", "null")] {
            let peer = try Peer("wormhole", ["value", "--container", container.path, "--name", name])
            #expect(try await peer.awaitExit() == 0)
            #expect(peer.output == [printed])
        }
    }

    @Test("a container folder that does not exist is refused unless --create; commands that only read never make one")
    func create() async throws {
        let parent = TemporaryContainer()
        let missing = parent.path + "/typo"
        for command in [["post", "--name", "x"], ["listen", "--count", "0"], ["value", "--name", "v", "--set", "1"]] {
            let peer = try Peer("wormhole", [command[0], "--container", missing] + command.dropFirst())
            #expect(try await peer.awaitExit() == 2, "\(command)")
            #expect(peer.errorOutput.first?.contains("pass --create") == true)
            #expect(!FileManager.default.fileExists(atPath: missing))
        }
        // Reading a value makes none either, and is told the same; the others never make one, and say so.
        let reading = try Peer("wormhole", ["value", "--container", missing, "--name", "v"])
        #expect(try await reading.awaitExit() == 2)
        #expect(reading.errorOutput.first?.contains("pass --create") == true, "\(reading.errorOutput)")
        for command in [["retained", "--name", "x", "--clear"], ["status"], ["forget", "--client", "c"]] {
            let peer = try Peer("wormhole", [command[0], "--container", missing] + command.dropFirst())
            #expect(try await peer.awaitExit() == 2, "\(command)")
            #expect(peer.errorOutput.count == 1, "\(command): \(peer.errorOutput)")
            #expect(peer.errorOutput.first?.contains("\(command[0]) never makes one") == true, "\(command): \(peer.errorOutput)")
            #expect(!FileManager.default.fileExists(atPath: missing))
        }
        let created = try Peer("wormhole", ["post", "--container", missing, "--create", "--name", "x"])
        #expect(try await created.awaitExit() == 0)
        #expect(FileManager.default.fileExists(atPath: missing + "/registry"))
    }

    @Test("value round-trips: a date and data by --type, a double keeps .0, --set null and --reset unset it, no \\/")
    func valueRoundTrips() async throws {
        let container = TemporaryContainer()
        func run(_ arguments: [String]) async throws -> String? {
            let peer = try Peer("wormhole", ["value", "--container", container.path, "--name", "v"] + arguments)
            #expect(try await peer.awaitExit() == 0, "\(arguments): \(peer.errorOutput)")
            return peer.output.last
        }
        _ = try await run(["--set", "2026-11-25T10:00:00.250Z", "--type", "date"])
        #expect(try await run([]) == #""2026-11-25T10:00:00.250Z""#)
        let center = try GroupNotificationCenter(containerURL: container.url)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(GroupValue("v", default: Date.distantPast, in: center).value == formatter.date(from: "2026-11-25T10:00:00.250Z"))
        _ = try await run(["--set", "AAEC/w==", "--type", "data"])
        #expect(try await run([]) == #""AAEC/w==""#)
        #expect(GroupValue("v", default: Data(), in: center).value == Data([0, 1, 2, 255]))
        _ = try await run(["--set", #"{"path": "a/b", "n": 1}"#])
        #expect(try await run([]) == #"{"n":1,"path":"a/b"}"#)
        _ = try await run(["--set", "1.0"])
        #expect(try await run([]) == "1.0")
        #expect(GroupValue<Double>("v", default: 0.5, in: center).value == 1.0)
        _ = try await run(["--set", #"{"a": [1.0, 2, true]}"#])
        #expect(try await run([]) == #"{"a":[1.0,2,true]}"#)
        // null inside a value is stored as a typed process stores nil; the string "$null" stays a string.
        _ = try await run(["--set", #"{"a": null, "b": 1, "c": "$null"}"#])
        #expect(try await run([]) == #"{"a":null,"b":1,"c":"$null"}"#)
        let typed = GroupValue<[String: Int?]>("v", default: [:], in: center)
        _ = try await run(["--set", #"{"a": null, "b": 1}"#])
        #expect(typed.value.count == 2 && typed.value["a"] == .some(nil) && typed.value["b"] == 1, "\(typed.value)")
        // --set null is a reset, not a stored nil: its announcement carries a version and no value.
        let announcements = try Peer("wormhole", ["listen", "--container", container.path, "--count", "1",
                                                  "--name", GroupValue<Int>.notificationName(for: "v").rawValue])
        try await announcements.awaitError(containing: "listening")
        _ = try await run(["--set", "null"])
        #expect(try await run([]) == "null")
        #expect(try await announcements.awaitExit() == 0)
        let announced = try #require(announcements.jsonLines().first?["userInfo"] as? [String: Any])
        #expect(announced["version"] != nil && announced["value"] == nil, "\(announced)")
        // An integer past 2^53 stays itself: it is not read through a double.
        _ = try await run(["--set", "9007199254740993"])
        #expect(try await run([]) == "9007199254740993")
        _ = try await run(["--reset"])
        #expect(try await run([]) == "null")
    }

    @Test("listen takes its registration away on SIGTERM and on SIGINT")
    func signals() async throws {
        for number in [SIGTERM, SIGINT] {
            let container = TemporaryContainer()
            let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "s"])
            try await listener.awaitError(containing: "listening")
            let center = try GroupNotificationCenter(containerURL: container.url)
            #expect(center.listenerStatus().count == 1)
            listener.signal(number)
            #expect(try await listener.awaitExit() == 0)
            #expect(center.listenerStatus().isEmpty, "signal \(number)")
        }
    }

    @Test("status --clean removes listeners that are gone, never a stopped or durable one, and says how many; without it, nothing")
    func statusCleans() async throws {
        let container = TemporaryContainer()
        let dead = try Peer("wormhole", ["listen", "--container", container.path, "--name", "d"])
        try await dead.awaitError(containing: "listening")
        let stopped = try Peer("wormhole", ["listen", "--container", container.path, "--name", "s"])
        try await stopped.awaitError(containing: "listening")
        let durable = try Peer("wormhole", ["listen", "--container", container.path, "--client", "w"])
        try await durable.awaitError(containing: "listening")
        dead.signal(SIGKILL)
        _ = try? await dead.awaitExit()
        durable.signal(SIGKILL)
        _ = try? await durable.awaitExit()
        try stopped.suspend()
        defer { stopped.signal(SIGCONT) }
        let kept = try Peer("wormhole", ["status", "--container", container.path, "--no-clean"])
        #expect(try await kept.awaitExit() == 0)
        #expect(kept.output.first?.contains("3 listener(s)") == true, "\(kept.output)")
        let cleaned = try Peer("wormhole", ["status", "--container", container.path, "--clean"])
        #expect(try await cleaned.awaitExit() == 0)
        #expect(cleaned.output.first?.contains("2 listener(s); removed 1 gone") == true, "\(cleaned.output)")
    }

    @Test("forget removes an offline durable identity and its spool, and is refused while a process runs it")
    func forget() async throws {
        let container = TemporaryContainer()
        let durable = try Peer("wormhole", ["listen", "--container", container.path, "--client", "w", "--name", "x"])
        try await durable.awaitError(containing: "listening")
        let refused = try Peer("wormhole", ["forget", "--container", container.path, "--client", "w"])
        #expect(try await refused.awaitExit() == 1)
        #expect(refused.errorOutput.first?.contains("identity in use") == true, "\(refused.errorOutput)")
        durable.signal(SIGKILL)
        _ = try? await durable.awaitExit()
        let center = try GroupNotificationCenter(containerURL: container.url)
        center.post(name: .init("x"), object: nil, userInfo: ["i": 1])
        #expect(center.listenerStatus().first?.spooledNotifications == 1)
        let forgot = try Peer("wormhole", ["forget", "--container", container.path, "--client", "w"])
        #expect(try await forgot.awaitExit() == 0, "\(forgot.errorOutput)")
        #expect(center.listenerStatus().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/spool").isEmpty)
        let again = try Peer("wormhole", ["forget", "--container", container.path, "--client", "w"])
        #expect(try await again.awaitExit() == 1)
    }

    @Test("every mistake in the command line exits 2 with one line, and leaves no container behind")
    func everyMistakeExitsTwo() async throws {
        let container = TemporaryContainer()
        let missing = container.path + "/typo"
        let at = ["--container", container.path]
        let cases: [([String], String)] = [
            ([], "give a command"),
            (["post", "--name", ""] + at, "--name is empty"),
            (["post", "--name=", "--container", container.path], "--name is empty"),
            (["listen", "--object", ""] + at, "--object is empty"),
            (["listen", "--client", ""] + at, "--client is empty"),
            (["listen", "--client", String(repeating: "c", count: 5000)] + at, "client identifier"),
            (["post", "--name", "n", "--object", String(repeating: "o", count: 5000)] + at, "longer than"),
            (["post"] + at, "post needs --name"),
            (["retained"] + at, "retained needs --name"),
            (["value"] + at, "value needs --name"),
            (["forget"] + at, "forget needs --client"),
            (["retained", "--list", "--name", "n"] + at, "--list takes no --name or --clear"),
            (["retained", "--list", "--clear"] + at, "--list takes no --name or --clear"),
            (["retained", "--list=yes"] + at, "--list takes no value"),
            (["value", "--list", "--name", "n"] + at, "--list takes no --name, --set, --type or --reset"),
            (["value", "--list", "--reset"] + at, "--list takes no --name, --set, --type or --reset"),
            (["value", "--list", "--set", "1"] + at, "--list takes no --name, --set, --type or --reset"),
            (["status", "--name", "n"] + at, "unknown option --name"),
            (["retained", "--name", "n", "--json"] + at, "unknown option --json"),
            (["demo", "--fast"], "unknown option --fast"),
            (["status", "--container", "/"], "no Wormhole container"),
            (["status", "--group", "a/b"], "cannot name a folder"),
            (["value", "--name", "v", "--set", "hello"] + at, #"a bare word needs quotes: write "hello" (in a shell: '"hello"')"#),
            (["value", "--name", "v", "--set", #"{"a": [1, two]}"#] + at, #"column 11: a bare word needs quotes: write "two""#),
            (["value", "--name", "v", "--set", "{a: 1}"] + at, #"a key needs quotes: write "a""#),
            (["value", "--name", "v", "--set", "'x'"] + at, "double quotes"),
            (["value", "--name", "v", "--set", "1 2"] + at, "more after the JSON value"),
            (["value", "--name", "v", "--set", "NaN"] + at, "JSON has no NaN"),
            (["value", "--name", "v", "--set", "-Infinity"] + at, "JSON has no -Infinity"),
            (["value", "--name", "v", "--set", "-x"] + at, "a '-' must be followed by digits"),
            (["value", "--name", "v", "--set", "01"] + at, "cannot start with 0"),
            (["value", "--name", "v", "--set", #""\ud800""#] + at, "surrogate pair"),
            (["value", "--name", "v", "--set", #""\u+041""#] + at, "column 4: \\u takes four hexadecimal digits"),
            (["value", "--name", "v", "--set", #""\u-000""#] + at, "\\u takes four hexadecimal digits"),
            (["value", "--name", "v", "--set", "\u{FEFF}1"] + at, "column 1: the text starts with a byte order mark"),
            (["value", "--name", "v", "--set", "18446744073709551616"] + at, "past the range of 64-bit integers"),
            (["value", "--name", "v", "--set", "-9223372036854775809"] + at, "past the range of 64-bit integers"),
            (["value", "--name", "v", "--set", "1e400"] + at, "too large for a 64-bit real"),
            (["value", "--name", "v", "--set", String(repeating: "[", count: 200)] + at, "nests deeper than 127"),
            (["value", "--name", "v", "--set", String(repeating: "[", count: 128) + String(repeating: "]", count: 128)] + at,
             "column 128: nests deeper than 127"),
            (["post", "--name", "n", "--user-info", "{\"a\": " + String(repeating: "[", count: 128)] + at, "nests deeper than 128"),
            (["value", "--name", "v", "--set", "1e-400"] + at, "too small for a 64-bit real"),
            // What the error quotes of a long input stays short.
            (["value", "--name", "v", "--set", String(repeating: "w", count: 100_000)] + at, "write \"" + String(repeating: "w", count: 40) + "…\""),
            (["post", "--name", "n", "--user-info", "42"] + at, "--user-info must be a JSON object"),
            (["post", "--name", "n", "--user-info", #""text""#] + at, "--user-info must be a JSON object"),
            (["post", "--name", "n", "--user-info", #"{"a": 1, "a": 2}"#] + at, #"the key "a" is given twice"#),
            (["post", "--name", "n", "--user-info", #"{"big": 18446744073709551616}"#] + at, "past the range of 64-bit integers"),
            (["post", "--name", "n", "--user-info", #"{"s": "open}"#] + at, "the string is not closed"),
        ]
        for (arguments, expected) in cases {
            let peer = try Peer("wormhole", arguments)
            #expect(try await peer.awaitExit() == 2, "\(arguments)")
            #expect(peer.errorOutput.count == 1, "\(arguments): \(peer.errorOutput)")
            #expect(peer.errorOutput.first?.contains(expected) == true, "\(arguments): \(peer.errorOutput)")
            #expect(peer.output.isEmpty, "\(arguments): \(peer.output)")
        }
        // A container that does not exist, for every command that names one.
        for command in [["post", "--name", "x"], ["listen"], ["value", "--name", "v", "--set", "1"], ["value", "--name", "v"],
                        ["retained", "--name", "x"], ["retained", "--list"], ["value", "--list"], ["status"], ["forget", "--client", "c"]] {
            let peer = try Peer("wormhole", [command[0], "--container", missing] + command.dropFirst())
            #expect(try await peer.awaitExit() == 2, "\(command)")
            #expect(peer.errorOutput.count == 1, "\(command): \(peer.errorOutput)")
            #expect(peer.errorOutput.first?.contains("does not exist") == true, "\(command): \(peer.errorOutput)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
        // A mistake in --set leaves the value as it was.
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("v", default: -1, in: center).value == -1)
    }

    @Test("COMMAND --help prints that command's usage and exits 0, for every command")
    func helpForEveryCommand() async throws {
        for command in ["listen", "post", "retained", "value", "status", "forget", "demo"] {
            for flag in ["--help", "-h"] {
                let peer = try Peer("wormhole", [command, flag])
                #expect(try await peer.awaitExit() == 0, "\(command) \(flag): \(peer.errorOutput)")
                #expect(peer.output.first?.hasPrefix("usage: wormhole \(command)") == true, "\(command): \(peer.output)")
                #expect(peer.errorOutput.isEmpty, "\(command): \(peer.errorOutput)")
            }
        }
    }

    /// The environments the numbers are tried in: each transport, and the paths Apple platforms take.
    static let numberEnvironments: [[String: String]] = [
        ["WORMHOLE_TRANSPORT": "seqpacket"],
        ["WORMHOLE_TRANSPORT": "datagram"],
        ["WORMHOLE_TRANSPORT": "datagram", "WORMHOLE_APPLE_PATHS": "1"],
    ]

    @Test("integers across the whole Int64 and UInt64 ranges go through post, listen and value unchanged; reals keep .0",
          arguments: numberEnvironments)
    func hugeIntegers(environment: [String: String]) async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "n", "--count", "1"],
                                environment: environment)
        try await listener.awaitError(containing: "listening")
        let userInfo = #"{"max": 18446744073709551615, "half": 9223372036854775808, "top": 9223372036854775807, "#
            + #""min": -9223372036854775808, "list": [18446744073709551614, -1], "real": 1.0, "tiny": 5e-324}"#
        let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "n", "--user-info", userInfo],
                              environment: environment)
        #expect(try await poster.awaitExit() == 0, "\(poster.errorOutput)")
        #expect(try await listener.awaitExit() == 0)
        // Read as text: the test's own JSON reader may not keep every digit either.
        let line = try #require(listener.output.first)
        #expect(line == #"{"name":"n","object":null,"userInfo":{"half":9223372036854775808,"list":[18446744073709551614,-1],"#
            + #""max":18446744073709551615,"min":-9223372036854775808,"real":1.0,"tiny":5e-324,"top":9223372036854775807}}"#)

        func value(_ arguments: [String]) async throws -> String? {
            let peer = try Peer("wormhole", ["value", "--container", container.path, "--name", "v"] + arguments, environment: environment)
            #expect(try await peer.awaitExit() == 0, "\(arguments): \(peer.errorOutput)")
            return peer.output.last
        }
        let center = try GroupNotificationCenter(containerURL: container.url)
        for text in ["18446744073709551615", "9223372036854775808", "9223372036854775807", "-9223372036854775808", "1.0", "-0.0"] {
            _ = try await value(["--set", text])
            await #expect(try value([]) == text)
        }
        _ = try await value(["--set", "18446744073709551615"])
        #expect(GroupValue<UInt64>("v", default: 0, in: center).value == UInt64.max)
        _ = try await value(["--set", "-9223372036854775808"])
        #expect(GroupValue<Int64>("v", default: 0, in: center).value == Int64.min)
        _ = try await value(["--set", #"{"a": [18446744073709551615, -9223372036854775808, 2.5]}"#])
        await #expect(try value([]) == #"{"a":[18446744073709551615,-9223372036854775808,2.5]}"#)
        // What a typed process stores reads back the same through the tool.
        _ = try await value(["--reset"])
        try GroupValue<UInt64>("v", default: 0, in: center).set(UInt64.max - 1)
        await #expect(try value([]) == "18446744073709551614")
    }

    @Test("a userInfo with NaN and infinities is printed by listen and retained as valid JSON, name and object kept",
          arguments: numberEnvironments)
    func nonFiniteReals(environment: [String: String]) async throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "nf", "--count", "1"],
                                environment: environment)
        try await listener.awaitError(containing: "listening")
        let center = try GroupNotificationCenter(containerURL: container.url)
        let report = try center.postReporting(
            name: .init("nf"), object: "api",
            userInfo: ["nan": Double.nan, "inf": Double.infinity, "ninf": -Double.infinity, "n": 1, "r": 2.0,
                       "list": [Double.nan, 0.5], "float": Float.infinity,
                       "never": Date(timeIntervalSinceReferenceDate: .nan), "far": Date(timeIntervalSinceReferenceDate: 1e300),
                       "date": Date(timeIntervalSinceReferenceDate: 0.25)], retain: true)
        #expect(report.delivered == 1)
        #expect(try await listener.awaitExit() == 0)
        let retained = try Peer("wormhole", ["retained", "--container", container.path, "--name", "nf"], environment: environment)
        #expect(try await retained.awaitExit() == 0)
        // A date ISO 8601 cannot show prints as its seconds since 2001.
        let expected = #"{"name":"nf","object":"api","userInfo":{"date":"2001-01-01T00:00:00.250Z","far":1e+300,"#
            + #""float":"Infinity","inf":"Infinity","list":["NaN",0.5],"n":1,"nan":"NaN","never":"NaN","ninf":"-Infinity","r":2.0}}"#
        for peer in [listener, retained] {
            #expect(peer.output == [expected])
            let line = try #require(peer.jsonLines().first, "\(peer.output)")
            #expect(line["name"] as? String == "nf")
            #expect(line["object"] as? String == "api")
        }
        // A group value holding one prints the same way.
        try GroupValue<Double>("v", default: 0, in: center).set(-.infinity)
        let value = try Peer("wormhole", ["value", "--container", container.path, "--name", "v"], environment: environment)
        #expect(try await value.awaitExit() == 0)
        #expect(value.output == [#""-Infinity""#])
    }
}
