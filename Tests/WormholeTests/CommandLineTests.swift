import Foundation
import Testing
@testable import Wormhole

@Suite("The wormhole command")
struct CommandLineTests {
    @Test("listen prints JSON lines of what post sends; post prints what it delivered")
    func listenAndPost() throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "greet", "--count", "1"])
        try listener.waitForError(containing: "listening")
        let poster = try Peer("wormhole", [
            "post", "--container", container.path, "--name", "greet", "--object", "cli",
            "--user-info", #"{"who": "world", "n": 2, "list": [1, 2], "inner": {"ok": true}}"#,
        ])
        #expect(try poster.waitForExit() == 0)
        #expect(poster.output.first == "posted greet: delivered 1, spooled 0")
        #expect(try listener.waitForExit() == 0)
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
    func badUserInfo() throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "n", "--count", "1"])
        try listener.waitForError(containing: "listening")
        let null = try Peer("wormhole", ["post", "--container", container.path, "--name", "n", "--user-info", #"{"a": null}"#])
        #expect(try null.waitForExit() == 0)
        #expect(try listener.waitForExit() == 0)
        #expect((listener.jsonLines().last?["userInfo"] as? [String: Any])?["a"] is NSNull)
        for json in ["[1]", "{not json"] {
            let poster = try Peer("wormhole", ["post", "--container", container.path, "--name", "x", "--user-info", json])
            #expect(try poster.waitForExit() == 2)
            #expect(poster.errorOutput.first?.contains("--user-info") == true)
        }
    }

    @Test("status shows each listener: pid, what it observes, state and spool depth")
    func status() throws {
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", "s", "--object", "o"])
        try listener.waitForError(containing: "listening")
        try listener.suspend()
        // Over the 128 KiB that go through the socket: the first is passed to the stopped listener as a shared
        // memory file where the platform can; what would take its unread shared frames past 16 MiB is spooled.
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "s", "--object", "o",
                                                     "--payload", "9000000", "--count", "3"])
        #expect(try poster.waitForExit(timeout: 60) == 0)
        let spooled = try #require(poster.jsonLines().first?["spooled"] as? Int)
        #expect(spooled == (SharedFrame.isAvailable ? 2 : 3))
        let status = try Peer("wormhole", ["status", "--container", container.path, "--json"])
        #expect(try status.waitForExit() == 0)
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
        #expect(try text.waitForExit() == 0)
        #expect(text.output.contains { $0.contains("pid \(listener.pid)") })
    }

    @Test("the demo runs by itself and finishes in a few seconds")
    func demo() throws {
        let demo = try Peer("wormhole", ["demo"])
        #expect(try demo.waitForExit(timeout: 60) == 0)
        #expect(demo.output.contains { $0.contains("attachment of 262144 bytes") })
        #expect(demo.output.contains { $0.contains("replies came back, in order") })
        #expect(demo.output.contains { $0.hasPrefix("[widget]") && $0.contains("revision 4") })
        #expect(demo.output.last == "[app] done")
    }

    @Test("usage errors exit with status 2 and say what is wrong")
    func usage() throws {
        let missing = try Peer("wormhole", ["post", "--name", "x"])
        #expect(try missing.waitForExit() == 2)
        #expect(missing.errorOutput.first?.contains("--group") == true)
        let unknown = try Peer("wormhole", ["frobnicate"])
        #expect(try unknown.waitForExit() == 2)
    }
}
