// A coverage-guided fuzz target (libFuzzer) over everything that reads bytes another process wrote: frames,
// spool records, the registry, and userInfo archives of both formats (compact and keyed, told apart by their
// first bytes as a receiver does), with property-list classes and with a class of the user's own decoded by
// Wormhole's coder. Built and run by run-fuzzer.sh, not by SwiftPM, together with
// Tests/WormholeTests/Support/FuzzNode.swift and ArchiveMutator.swift, against the engine's module alone.
import Foundation
@testable import WormholeEngine

/// The classes the archive readers below allow, built once.
private let userClasses = AllowedClasses(FuzzNode.allowedClasses)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    // The first byte picks the reader, so one corpus drives all five.
    guard let selector = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    switch selector % 5 {
    case 0:
        let frame = decodeBothWays(body)
        if let archive = frame?.userInfo {
            _ = try? UserInfoCodec.decode(archive, allowed: .propertyList)
        }
    case 1:
        for record in SpoolRecord.decodeAll(body).frames { _ = try? Frame(decoding: record) }
    case 2:
        _ = try? RegistryFormat.decodeEntry(body)
    case 3:
        let value = try? UserInfoCodec.decode(body, allowed: .propertyList)
        if let value { _ = (value as NSDictionary).description }
        if CompactArchive.isCompact(body) { readMapped(body, agreeingWith: value) }
    default:
        // What a receiver does with a userInfo: decode it, walk all of it, and pass it on.
        if let value = try? UserInfoCodec.decode(body, allowed: userClasses) {
            _ = walk(value)
            if let again = try? UserInfoCodec.encode(value, maximumSize: 1 << 24) {
                _ = try? UserInfoCodec.decode(again, allowed: userClasses)
            }
        }
    }
    return 0
}

/// Decodes `bytes` as a frame both ways a receiver does: from an array (a spool record), and from a buffer that
/// is reused (a socket's receive slot), here overwritten once decoded. Both must give the same frame, or the same
/// error, or the target traps.
private func decodeBothWays(_ bytes: [UInt8]) -> Frame? {
    let fromArray = Result { () throws(WormholeError) -> Frame in try Frame(decoding: bytes) }
    var slot = bytes
    let fromSlot = slot.withUnsafeMutableBytes { raw in
        let result = Result { () throws(WormholeError) -> Frame in try Frame(decoding: UnsafeRawBufferPointer(raw)) }
        raw.initializeMemory(as: UInt8.self, repeating: 0xA5)
        return result
    }
    switch (fromArray, fromSlot) {
    case (.success(let a), .success(let b)):
        guard a.encoded() == b.encoded() else { fatalError("a frame decoded from a buffer differs from the array's") }
        return a
    case (.failure(let a), .failure(let b)):
        guard a.detail == b.detail else { fatalError("a frame refused from a buffer for another reason than the array's") }
        return nil
    default:
        fatalError("a frame decoded from a buffer and refused from the array, or the other way")
    }
}

/// Reads `archive` as the receiver of a shared frame does: from a memory file, mapped, at an offset that is not
/// a page's. Decoded twice, as two observers with their own classes would: the first decoding's `Data` values
/// use the mapping's pages in place (every one, in this build); they are read whole, then overwritten in place
/// once nothing else holds them. The second decoding copies, and must not see those writes. Both must give
/// what the array gave, or the target traps.
private func readMapped(_ archive: [UInt8], agreeingWith expected: [AnyHashable: Any]?) {
    let offset = 7
    guard let file = try? LinuxCalls.makeMemoryFile("fuzz"),
        (try? (Array(repeating: 0, count: offset) + archive).withRawBytes { (raw) throws(WormholeError) in
            try file.descriptor.writeAll(raw, at: 0)
        }) != nil,
        let mapping = try? FileMapping(file.descriptor, count: offset + archive.count)
    else { return }
    let mapped = ArchiveBytes(mapping, offset: offset, count: archive.count)
    /// The Data values of one decoding of `mapped`, the userInfo itself gone; nil when it was refused.
    func decodedData() -> [Data]? {
        let value = try? UserInfoCodec.decode(mapped, allowed: .propertyList)
        guard (value == nil) == (expected == nil) else { fatalError("mapped and array decodings disagree on refusal") }
        guard let value, let expected else { return nil }
        guard same(value, expected) else { fatalError("mapped and array decodings disagree") }
        var data: [Data] = []
        collectData(value, into: &data)
        return data
    }
    for _ in 0..<2 {
        guard var data = decodedData() else { return }
        for index in data.indices {
            _ = data[index].reduce(0, &+)
            data[index].withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xA5) }
        }
    }
}

/// Whether two decoded values are the same, compared as values: dictionaries by key (two dictionaries iterate in
/// orders of their own), and NaN equal to NaN.
private func same(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (x as [AnyHashable: Any], y as [AnyHashable: Any]):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? isNaN(key.base) }
    case let (x as [Any], y as [Any]): return x.count == y.count && zip(x, y).allSatisfy(same)
    case let (x as Set<AnyHashable>, y as Set<AnyHashable>): return x.count == y.count && (x == y || x.contains { isNaN($0.base) })
    case let (x as Data, y as Data): return x == y
    case let (x as String, y as String): return x == y
    case let (x as Date, y as Date): return x == y || (x.timeIntervalSinceReferenceDate.isNaN && y.timeIntervalSinceReferenceDate.isNaN)
    case let (x as NSNumber, y as NSNumber): return x == y || (isNaN(x) && isNaN(y))
    default: return type(of: a) == type(of: b) && "\(a)" == "\(b)"
    }
}

private func isNaN(_ value: Any) -> Bool { (value as? NSNumber)?.doubleValue.isNaN == true }

/// Every `Data` in `value`.
private func collectData(_ value: Any, into data: inout [Data]) {
    switch value {
    case let dictionary as [AnyHashable: Any]: for element in dictionary.values { collectData(element, into: &data) }
    case let array as [Any]: for element in array { collectData(element, into: &data) }
    case let element as Data: data.append(element)
    default: break
    }
}

/// Visits every value reachable from `value`, as a consumer would; returns how many there were.
private func walk(_ value: Any) -> Int {
    switch value {
    case let dictionary as [AnyHashable: Any]: return dictionary.values.reduce(1) { $0 + walk($1) }
    case let array as [Any]: return array.reduce(1) { $0 + walk($1) }
    case let set as Set<AnyHashable>: return set.reduce(1) { $0 + walk($1.base) }
    case let node as FuzzNode:
        return node.children.reduce(1) { $0 + walk($1) } + node.map.values.reduce(0) { $0 + walk($1) }
            + (node.extra.map(walk) ?? 0) + node.name.utf8.count
    case let string as String: return string.utf8.count
    default: return 1
    }
}

@_silgen_name("LLVMFuzzerMutate")
private func libFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

/// A seeded generator for the mutator (SplitMix64).
private struct MutationGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Structure-aware mutation of keyed archives (selectors 3 and 4): objects, `$class` entries, UIDs, keys and
/// counts; byte mutation for the rest, and for one archive in four.
@_cdecl("LLVMFuzzerCustomMutator")
public func mutate(_ data: UnsafeMutablePointer<UInt8>?, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    guard let data else { return 0 }
    var generator = MutationGenerator(state: UInt64(seed) &* 0x2545_F491_4F6C_DD1D)
    guard size > 1, [3, 4].contains(data[0] % 5), generator.next() % 4 != 0,
        var mutator = ArchiveMutator(Array(UnsafeBufferPointer(start: data + 1, count: size - 1)))
    else {
        return libFuzzerMutate(data, size, maxSize)
    }
    mutator.mutate(using: &generator)
    let bytes = mutator.bytes
    guard bytes.count + 1 <= maxSize else { return libFuzzerMutate(data, size, maxSize) }
    bytes.withUnsafeBufferPointer { buffer in
        guard let source = buffer.baseAddress else { return }
        (data + 1).update(from: source, count: buffer.count)
    }
    return bytes.count + 1
}
