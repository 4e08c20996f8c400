import Foundation
@testable import WormholeBridge

/// What a parser made of some bytes: the operations it returned, and the error that stopped it, if one did.
struct NATSParse: Equatable {
    var ops: [NATSServerOp] = []
    var error: NATSProtocolError?
}

/// Feeding bytes to a parser as a connection does, in the pieces given.
enum NATSTestFeed {
    /// Appends each piece and reads every operation it completes, until the end or the first error.
    static func parse(
        _ pieces: [ArraySlice<UInt8>], maximumControlLine: Int = 4096, maximumPayload: Int = 1 << 20
    ) -> NATSParse {
        var parser = NATSParser(maximumControlLine: maximumControlLine, maximumPayload: maximumPayload)
        var result = NATSParse()
        for piece in pieces {
            parser.append(Array(piece))
            do {
                while let op = try parser.next() { result.ops.append(op) }
            } catch {
                result.error = error
                return result
            }
        }
        return result
    }

    /// `bytes` whole.
    static func parse(_ bytes: [UInt8], maximumControlLine: Int = 4096, maximumPayload: Int = 1 << 20) -> NATSParse {
        parse([bytes[...]], maximumControlLine: maximumControlLine, maximumPayload: maximumPayload)
    }

    /// `bytes` cut in two at `cut`.
    static func parse(_ bytes: [UInt8], cutAt cut: Int, maximumControlLine: Int = 4096, maximumPayload: Int = 1 << 20)
        -> NATSParse
    {
        parse([bytes[..<cut], bytes[cut...]], maximumControlLine: maximumControlLine, maximumPayload: maximumPayload)
    }

    /// `bytes` one byte at a time.
    static func parseBytewise(_ bytes: [UInt8], maximumControlLine: Int = 4096, maximumPayload: Int = 1 << 20)
        -> NATSParse
    {
        parse(bytes.indices.map { bytes[$0...$0] }, maximumControlLine: maximumControlLine, maximumPayload: maximumPayload)
    }
}
