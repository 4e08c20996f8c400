// A coverage-guided fuzz target (libFuzzer) over everything that reads bytes another process wrote: frames,
// spool records, the registry, and keyed archives. Built and run by run-fuzzer.sh, not by SwiftPM.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    // The first byte picks the reader, so one corpus drives all four.
    guard let selector = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    switch selector % 4 {
    case 0:
        if let frame = try? Frame(decoding: body), let archive = frame.userInfo {
            _ = try? KeyedArchiveDecoder.decodeUserInfo(archive, allowed: .propertyList)
        }
    case 1:
        for record in SpoolRecord.decodeAll(body).frames { _ = try? Frame(decoding: record) }
    case 2:
        _ = try? RegistryFormat.decode(body)
    default:
        if let value = try? KeyedArchiveDecoder.decodeUserInfo(body, allowed: .propertyList) {
            _ = (value as NSDictionary).description
        }
    }
    return 0
}
