import Foundation
import Testing
@testable import WormholeBridge
import WormholeTestSupport

@Suite("NATS: notification names as subjects", .throttled)
struct NATSSubjectTests {
    /// Names chosen to break a mapping: empty tokens, wildcards, escapes, whitespace, control characters, non-ASCII.
    private let nasty = [
        "", ".", "..", "a..b", ".a", "a.", "*", ">", "a.*.>", "%", "%41", "%2E", "with space", "tab\t", "CR\r\nLF",
        "emoji 🚀", "é", "e\u{301}", "$JS.API", "a%2Eb", "cart.changed", "\u{0}", "\u{7F}", "\u{85}", "\u{2028}",
        "a/b\\c", "+=@~:;,!?'\"", String(repeating: "x", count: 600), String(repeating: "🚀.", count: 200),
        String(repeating: ".", count: 300), "com.example.CartDidChange",
    ]

    @Test("a name maps to a readable tail, token by token")
    func exactTails() {
        let cases: [(String, String)] = [
            ("cart.changed", "cart.changed"), ("", "%"), (".", "%.%"), ("..", "%.%.%"), ("a..b", "a.%.b"),
            (".a", "%.a"), ("a.", "a.%"), ("*", "%2A"), (">", "%3E"), ("a.*.>", "a.%2A.%3E"), ("%", "%25"),
            ("%41", "%2541"), ("with space", "with%20space"), ("tab\t", "tab%09"), ("CR\r\nLF", "CR%0D%0ALF"),
            ("é", "%C3%A9"), ("emoji 🚀", "emoji%20%F0%9F%9A%80"), ("$JS.API", "%24JS.API"), ("a%2Eb", "a%252Eb"),
            ("Keep-these_1", "Keep-these_1"), ("a+b=c@d~e", "a%2Bb%3Dc%40d%7Ee"),
        ]
        for (name, tail) in cases { #expect(NATSSubject.tail(for: name) == tail, "\(name.debugDescription)") }
    }

    /// Checks what every tail must be, and that it reads back as `name`, byte for byte.
    private func checkRoundTrip(_ name: String) {
        let tail = NATSSubject.tail(for: name)
        #expect(tail.utf8.allSatisfy { NATSSubject.isKept($0) || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: ".") })
        #expect(NATSSubject.isValidLiteral(tail) && NATSSubject.isValid(tail), "\(tail)")
        #expect(NATSSubject.isValidLiteral("prefix.\(tail)"))
        #expect(!tail.hasPrefix("$"))
        let back = NATSSubject.name(fromTail: tail)
        #expect(back.map { Array($0.utf8) } == Array(name.utf8), "\(name.debugDescription)")
    }

    @Test("nasty names round-trip, each tail a valid literal subject")
    func nastyRoundTrips() {
        for name in nasty { checkRoundTrip(name) }
        // Canonically equivalent names are different names: their bytes differ, so do their tails.
        #expect(NATSSubject.tail(for: "é") != NATSSubject.tail(for: "e\u{301}"))
    }

    @Test("a few thousand random names round-trip")
    func randomRoundTrips() {
        var generator = SeededGenerator(seed: 2_026)
        let alphabet: [Unicode.Scalar] = [".", ".", "%", "*", ">", " ", "\t", "\r", "\n", "$", "a", "Z", "0", "-", "_",
                                          "\u{0}", "\u{7F}", "é", "🚀", "\u{2028}", "\u{FEFF}", "+", "~"]
        for _ in 0..<4_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                if Bool.random(using: &generator), let scalar = alphabet.randomElement(using: &generator) {
                    scalars.append(scalar)
                } else if let scalar = Unicode.Scalar(UInt32.random(in: 0...0x2FFFF, using: &generator)) {
                    scalars.append(scalar)
                }
            }
            checkRoundTrip(String(scalars))
        }
    }

    @Test("a tail that tail(for:) would not write reads as no name")
    func foreignTails() {
        for tail in [
            "", "a..b", ".a", "a.", ".", "%41", "%2E", "a%2Eb", "%c3%a9", "%%", "%4", "%ZZ", "a b", "*", ">", "a.*",
            "%FF", "%C3", "é", "$JS", "a=b", "%2", "%%41", "a\u{0}",
        ] {
            #expect(NATSSubject.name(fromTail: tail) == nil, "\(tail.debugDescription)")
        }
        #expect(NATSSubject.name(fromTail: "%") == "")
        #expect(NATSSubject.name(fromTail: "%.%") == ".")
        #expect(NATSSubject.name(fromTail: "cart.changed") == "cart.changed")
    }

    @Test("subject checks: literal, with wildcards, and prefixes")
    func checks() {
        for subject in ["a", "a.b", "_INBOX.x.1", "$JS.API.INFO", "a*b", "café", "a-b_c.d+e"] {
            #expect(NATSSubject.isValidLiteral(subject) && NATSSubject.isValid(subject), "\(subject)")
        }
        for subject in ["a.*", "*", ">", "a.>", "*.b.>"] {
            #expect(NATSSubject.isValid(subject) && !NATSSubject.isValidLiteral(subject), "\(subject)")
        }
        for subject in ["", "a..b", ".a", "a.", "a b", "a\tb", "a\r\n", "a.>.b", ">.a", "a\u{A0}", "\u{85}"] {
            #expect(!NATSSubject.isValid(subject) && !NATSSubject.isValidLiteral(subject), "\(subject.debugDescription)")
        }
        for prefix in ["wormhole", "wormhole.bridge", "a-b_c.D9"] { #expect(NATSSubject.isValidPrefix(prefix)) }
        for prefix in ["", ".", "a.", ".a", "a..b", "$JS", "a.$b", "a*", "a.>", "a b", "é", "a%b", "a/b"] {
            #expect(!NATSSubject.isValidPrefix(prefix), "\(prefix.debugDescription)")
        }
    }
}
