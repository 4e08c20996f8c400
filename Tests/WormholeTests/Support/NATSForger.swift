import Foundation
import WormholeRelay
@testable import WormholeBridge

#if canImport(Glibc)
import Glibc
#endif

/// Another client of a real server, allowed to publish anything and to call JetStream's API: what forges a
/// host's messages, or deletes the bridges' stream and consumers as an operator would. Each call blocks: run it
/// with `onDispatchThread`.
enum NATSForger {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Connects to `server`, writes `ops` after CONNECT, and returns what the server said once it answered the
    /// PING that follows them (so it read them all).
    @discardableResult
    static func send(_ server: NATSServer, _ ops: [UInt8]) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(server.port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"echo\":false}\r\n".utf8) + ops
            + Array("PING\r\n".utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.contains("PONG") {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw Failure(description: "the server ended the connection: \(received.suffix(200))") }
            received += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return received
    }

    /// HPUB of `payload` to `subject` with `headers`, the header block written as given (it need not read).
    static func hpub(_ subject: String, rawHeaders: String, payload: [UInt8]) -> [UInt8] {
        let head = Array(rawHeaders.utf8)
        return Array("HPUB \(subject) \(head.count) \(head.count + payload.count)\r\n".utf8) + head + payload + Array("\r\n".utf8)
    }

    /// HPUB of a message as a bridge writes one: `host` as its `Wormhole-Host` (none when nil).
    static func hpub(_ subject: String, host: String?, payload: [UInt8]) -> [UInt8] {
        var headers = "NATS/1.0\r\n"
        if let host { headers += "Wormhole-Host: \(host)\r\n" }
        return hpub(subject, rawHeaders: headers + "\r\n", payload: payload)
    }

    /// A bridge's payload: `item` as a binary property list.
    static func payload(_ item: RelayItem) throws -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return Array(try encoder.encode(item))
    }

    /// The subject a bridge with the default prefix publishes `name` to.
    static func subject(_ name: String) throws -> String {
        try BridgeSubjects(prefix: "wormhole").subject(for: name)
    }

    /// Calls JetStream's API (`$JS.API.<api>`) and returns its answer's JSON.
    @discardableResult
    static func call(_ server: NATSServer, _ api: String, _ body: String = "") throws -> String {
        let connection = try NATSConnection.open(server.address, name: "operator", timeout: .seconds(5))
        defer { connection.close(BridgeError("done")) }
        let reply = try connection.request("$JS.API.\(api)", payload: Array(body.utf8), timeout: .seconds(5))
        return String(decoding: reply.payload, as: UTF8.self)
    }

    /// The host id a bridge on `container` goes by, from its state.
    static func device(of container: TemporaryContainer) throws -> UInt64 {
        let data = try Data(contentsOf: container.url.appendingPathComponent("bridge/wormhole.bridge/state"))
        return try PropertyListDecoder().decode(BridgeState.self, from: data).device
    }

    /// Takes the next message of the consumer of the host `device` and acknowledges it, as a replica that lagged
    /// as it took the consumer over does: the consumer passes it over. Returns its stream sequence. Waits past the
    /// consumer's acknowledgement wait, for a message handed to a bridge's pull just before it stopped.
    static func skip(_ server: NATSServer, consumerOf device: UInt64) throws -> UInt64? {
        let connection = try NATSConnection.open(server.address, name: "operator", timeout: .seconds(5))
        defer { connection.close(BridgeError("done")) }
        let stream = JetStream(connection: connection, timeout: .seconds(5))
        let consumer = "host-" + String(device, radix: 16)
        let mailbox = try connection.mailbox()
        guard let message = try stream.next(stream: "WORMHOLE_WORMHOLE", consumer: consumer, expiry: .seconds(8), into: mailbox)
        else { return nil }
        try stream.acknowledge(message)
        try connection.roundTrip(timeout: .seconds(5))
        // `$JS.ACK.<stream>.<consumer>.<delivered>.<stream sequence>.…`
        return message.replyTo?.split(separator: ".").dropFirst(5).first.flatMap { UInt64($0) }
    }
}
