import Foundation
import Testing
@testable import WormholeRelay

/// What the relay and the bridge read from a link, a server or their files: binary property lists only, so that
/// a deeply nested XML one (Foundation's XML parser recurses once per level) is an error, never a crash.
@Suite struct StrictPropertyListTests {
    /// An XML property list of `depth` nested arrays.
    private func nestedXML(_ depth: Int) -> Data {
        Data((#"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">"# + String(repeating: "<array>", count: depth)
            + String(repeating: "</array>", count: depth) + "</plist>").utf8)
    }

    @Test func aDeeplyNestedXMLPayloadFromTheOtherDeviceIsAnErrorNotACrash() {
        #expect(throws: RelayLinkError.self) { try RelayEnvelope.decode(nestedXML(20_000)) }
    }

    @Test func whatTheRelayWritesStillReads() throws {
        let envelope = RelayEnvelope(device: 7, session: 1, items: [RelayItem(link: 1, poster: 2, sequence: 3, name: "n")], ack: nil)
        let decoded = try RelayEnvelope.decode(try envelope.encoded())
        #expect(decoded.items.map(\.name) == ["n"])
        #expect(decoded.device == 7)
    }
}
