import Foundation
import Testing
import Synchronization
@testable import Wormhole

@Suite("What others sent is escaped before it reaches a log line or a terminal", .throttled)
struct EscapingTests {
    @Test("controls, separators and bidirectional overrides are escaped; printable text and JSON are not")
    func escaping() throws {
        #expect(Escaping.forDisplay("plain name, é ✓") == "plain name, é ✓")
        #expect(Escaping.forDisplay("a\u{1B}[2Jb") == "a\\u001B[2Jb")
        #expect(Escaping.forDisplay("line\nforged: warning\r\t") == "line\\nforged: warning\\r\\t")
        #expect(Escaping.forDisplay("\u{9B}31m \u{7F} \u{202E}txt.exe \u{2028}") == "\\u009B31m \\u007F \\u202Etxt.exe \\u2028")
        // A JSON line stays the same JSON.
        let json = "{\"name\":\"a\u{202E}b\",\"n\":1}"
        let escaped = Escaping.forDisplay(json)
        let before = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let after = try JSONSerialization.jsonObject(with: Data(escaped.utf8)) as? [String: Any]
        #expect(before?["name"] as? String == after?["name"] as? String)
        #expect(!escaped.unicodeScalars.contains("\u{202E}"))
    }

    @Test("every character Unicode marks Bidi_Control is escaped, and no other printable one")
    func bidirectionalControls() {
        var controls: [Unicode.Scalar] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value), scalar.properties.isBidiControl else { continue }
            controls.append(scalar)
        }
        // Unicode 15 lists twelve, the Arabic letter mark among them.
        #expect(controls.count >= 12)
        #expect(controls.contains("\u{061C}"))
        for scalar in controls {
            let escaped = Escaping.forDisplay("a\(Character(scalar))b")
            #expect(!escaped.unicodeScalars.contains(scalar), "U+\(String(scalar.value, radix: 16)) printed raw")
        }
        #expect(Escaping.forDisplay("\u{0627}\u{0644}\u{200D}") == "\u{0627}\u{0644}\u{200D}")
    }

    @Test("a warning about a received name carries no terminal control")
    func warnings() {
        let lines = Mutex<[String]>([])
        Log.setHandler { line in lines.withLock { $0.append(line) } }
        defer { Log.setHandler(nil) }
        Log.warning("userInfo of \("evil\u{1B}]0;title\u{07}\nwormhole: forged") withheld")
        let logged = lines.withLock { $0 }
        #expect(logged == ["userInfo of evil\\u001B]0;title\\u0007\\nwormhole: forged withheld"])
    }

    @Test("status prints a listener's hostile names escaped")
    func status() async throws {
        let container = TemporaryContainer()
        let hostile = "cart\u{1B}[2J\u{1B}]0;pwned\u{07}\nforged line\u{061C}"
        let listener = try Peer("wormhole", ["listen", "--container", container.path, "--name", hostile])
        try await listener.awaitError(containing: "listening")
        let status = try Peer("wormhole", ["status", "--container", container.path])
        #expect(try await status.awaitExit() == 0)
        let text = status.output.joined(separator: "\n")
        #expect(text.contains("cart\\u001B[2J\\u001B]0;pwned\\u0007\\nforged line\\u061C"))
        #expect(!text.unicodeScalars.contains("\u{1B}") && !text.unicodeScalars.contains("\u{061C}") && !status.output.contains { $0.hasPrefix("forged") })
        listener.signal(SIGTERM)
    }
}
