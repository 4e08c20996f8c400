// A coverage-guided fuzz target (libFuzzer) over NATS's client protocol as the bridge reads and writes it: the
// parser of what a server sends, header blocks, and the mapping of notification names onto subjects. Built and
// run by run-fuzzer.sh, not by SwiftPM, against Sources/WormholeBridge/NATS alone (which imports only
// Foundation), compiled as the module WormholeBridge. Each input is one stream of server bytes; the target traps
// when the parser reads the same bytes differently depending on how they arrived, or when what the encoders write
// does not read back as what was written.
import Foundation
@testable import WormholeBridge

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    // Small limits, so that inputs of a few kilobytes reach them; and the defaults.
    for (line, payload) in [(256, 4096), (4096, 1 << 20)] {
        let whole = parse([bytes[...]], maximumControlLine: line, maximumPayload: payload)
        let pieces = parse(cut(bytes), maximumControlLine: line, maximumPayload: payload)
        guard pieces == whole else {
            fatalError("the parser read a stream cut in pieces differently: \(pieces) \(whole)")
        }
        if bytes.count <= 512 {
            let bytewise = parse(
                bytes.indices.map { bytes[$0...$0] }, maximumControlLine: line, maximumPayload: payload)
            guard bytewise == whole else { fatalError("the parser read a stream a byte at a time differently") }
        }
        for case .message(let message) in whole.ops { checkReencoded(message) }
    }
    checkHeaders(bytes)
    checkSubjects(bytes)
    return 0
}

/// What a parser made of a stream: its operations, and the error that stopped it.
private struct Parse: Equatable {
    var ops: [NATSServerOp] = []
    var error: NATSProtocolError?
}

private func parse(_ pieces: [ArraySlice<UInt8>], maximumControlLine: Int, maximumPayload: Int) -> Parse {
    var parser = NATSParser(maximumControlLine: maximumControlLine, maximumPayload: maximumPayload)
    var result = Parse()
    for piece in pieces {
        piece.withUnsafeBytes { parser.append($0) }
        do {
            while let op = try parser.next() { result.ops.append(op) }
        } catch {
            result.error = error
            // Unusable now: the same error again, whatever follows.
            parser.append([0x50, 0x49, 0x4E, 0x47, 0x0D, 0x0A])
            guard (try? parser.next()) == nil else { fatalError("the parser went on after an error") }
            return result
        }
    }
    return result
}

/// The stream in pieces of lengths taken from its own bytes (1 to 64), so that the fuzzer steers the cuts too.
private func cut(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    var pieces: [ArraySlice<UInt8>] = []
    var start = 0
    var step = 0
    while start < bytes.count {
        let length = 1 + Int(bytes[(step * 31) % bytes.count] & 0x3F)
        pieces.append(bytes[start..<min(bytes.count, start + length)])
        start += length
        step += 1
    }
    return pieces
}

/// A message the parser read, written again by the encoders and delivered back as the server would: it must read
/// as the same message. Only what the encoders accept is written: literal subjects, valid headers.
private func checkReencoded(_ message: NATSMessage) {
    guard message.headerError == nil, NATSSubject.isValidLiteral(message.subject),
        message.replyTo.map(NATSSubject.isValidLiteral) ?? true
    else { return }
    let published: [UInt8]
    do throws(NATSProtocolError) {
        if let headers = message.headers {
            published = try NATSClientOp.hpub(
                subject: message.subject, replyTo: message.replyTo, headers: headers, payload: message.payload)
        } else {
            published = try NATSClientOp.pub(
                subject: message.subject, replyTo: message.replyTo, payload: message.payload)
        }
    } catch {
        fatalError("the encoders refused a message the parser read: \(error)")
    }
    // PUB s [r] n → MSG s sid [r] n; HPUB likewise.
    guard let lineEnd = published.firstIndex(of: 0x0D) else { fatalError("an encoded PUB without CRLF") }
    var fields = published[..<lineEnd].split(separator: 0x20).map(Array.init)
    fields[0] = message.headers == nil ? Array("MSG".utf8) : Array("HMSG".utf8)
    fields.insert(Array(String(message.sid).utf8), at: 2)
    let delivered = Array(fields.joined(separator: [0x20])) + published[lineEnd...]
    // Re-encoding may lengthen the headers (`A:b` is written `A: b`): no limit applies to the reading back.
    let again = parse([delivered[...]], maximumControlLine: Int.max / 2, maximumPayload: Int.max)
    guard again == Parse(ops: [.message(message)], error: nil) else {
        fatalError("a re-encoded message read back differently: \(again) \(message)")
    }
}

/// A header block that reads is valid, and reads back as itself once encoded.
private func checkHeaders(_ bytes: [UInt8]) {
    guard let headers = try? NATSHeaders(parsing: bytes[...]) else { return }
    guard (try? headers.validate()) != nil else { fatalError("headers that read do not validate") }
    guard (try? NATSHeaders(parsing: headers.encoded()[...])) == headers else {
        fatalError("headers read back differently once encoded")
    }
}

/// The input as a tail must read as a name whose tail it is; as a name, its tail must be a literal subject that
/// reads back as the same bytes.
private func checkSubjects(_ bytes: [UInt8]) {
    guard let text = String(validating: bytes, as: UTF8.self) else { return }
    if let name = NATSSubject.name(fromTail: text), NATSSubject.tail(for: name) != text {
        fatalError("a tail read as a name whose tail is another")
    }
    let tail = NATSSubject.tail(for: text)
    guard NATSSubject.isValidLiteral(tail), NATSSubject.name(fromTail: tail).map({ Array($0.utf8) }) == bytes else {
        fatalError("a name did not come back from its tail")
    }
    _ = NATSSubject.isValid(text)
    _ = NATSSubject.isValidPrefix(text)
}
