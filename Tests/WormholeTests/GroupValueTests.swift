import Foundation
import Observation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine

@Suite("Group values: read anywhere, updated atomically across processes, watched", .throttled)
struct GroupValueTests {
    private func value(of peer: Peer, _ key: String) -> Int? {
        peer.jsonLines().last { $0[key] != nil }?[key] as? Int
    }

    @Test("4 processes × 500 concurrent updates, one stopped a second inside its update, end at 2,000 everywhere",
          .timeLimit(.minutes(10)))
    func concurrentUpdates() async throws {
        let container = TemporaryContainer()
        let arguments = ["value-add", "--container", container.path, "--name", "counter", "--count", "500", "--expect", "2000"]
        let stopped = try Peer("wormhole-test-peer", arguments + ["--stop-at", "250"])
        let others = try (0..<3).map { _ in try Peer("wormhole-test-peer", arguments) }
        try stopped.waitUntilStopped(timeout: 60)
        let since = Date()
        // The others finish all their updates while one is stopped in the middle of its own.
        for peer in others {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                // Counted before looking, so that a "done" printed in between is not waited past.
                let seen = peer.output.count
                if value(of: peer, "done") != nil { break }
                _ = try await peer.awaitLines(seen + 1, timeout: 60)
            }
            #expect(value(of: peer, "done") == 500)
        }
        #expect(stopped.isStopped)
        // Stopped a second at least, as the scenario goes.
        let remaining = 1 - Date().timeIntervalSince(since)
        if remaining > 0 { try await Task.sleep(for: .seconds(remaining)) }
        stopped.signal(SIGCONT)
        for peer in others + [stopped] {
            #expect(try await peer.awaitExit(timeout: 120) == 0)
            #expect(value(of: peer, "final") == 2000, "every observer's last value")
            #expect(value(of: peer, "read") == 2000)
        }
        // A process started afterwards, with every writer gone, reads it.
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "counter"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output == ["2000"])
    }

    @Test("an updater killed mid-way: every completed update counts once, plus at most the one it was in")
    func killedUpdater() async throws {
        let container = TemporaryContainer()
        let arguments = ["value-add", "--container", container.path, "--name", "k", "--count", "300"]
        let victim = try Peer("wormhole-test-peer", arguments)
        let others = try (0..<2).map { _ in try Peer("wormhole-test-peer", arguments) }
        _ = try await victim.awaitLines(100, timeout: 60)
        victim.signal(SIGKILL)
        _ = try? await victim.awaitExit()
        for peer in others { #expect(try await peer.awaitExit(timeout: 60) == 0) }
        let completed = 600 + victim.jsonLines().filter { $0["added"] != nil }.count
        let center = try GroupNotificationCenter(containerURL: container.url)
        let final = GroupValue("k", default: 0, in: center).value
        #expect(final >= completed && final <= completed + 1, "\(final) after \(completed) completed updates")
    }

    @Test("a change made by another process reaches Observation tracking and the values sequence, in order")
    func observed() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let value = GroupValue("obs", default: 0, in: center, tracksChanges: true)
        let changed = DispatchSemaphore(value: 0)
        #expect(withObservationTracking({ value.value }, onChange: { changed.signal() }) == 0)
        var iterator = value.values.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        for number in [5, 6] {
            let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "obs", "--set", "\(number)"])
            #expect(try await writer.awaitExit() == 0)
            #expect(await iterator.next() == number)
        }
        #expect(changed.wait(timeout: .now() + 20) == .success)
        #expect(value.value == 6)
    }

    @Test("each change is an ordinary notification: the value and its version")
    func announced() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: GroupValue<[Int]>.notificationName(for: "list"), object: nil, queue: nil, using: recorder.block)
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "list", "--set", "[1, 2]"])
        #expect(try await writer.awaitExit() == 0)
        let note = try #require(try await recorder.wait(for: 1).first)
        #expect(note.userInfo?["value"] as? [Int] == [1, 2])
        #expect(note.userInfo?["version"] as? Int == 1)
        #expect(GroupValue("list", default: [Int](), in: center).value == [1, 2])
    }

    @Test("a stored value of another type reads as the default, counted; update refuses to overwrite it; reset clears it")
    func otherType() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let number = GroupValue("mixed", default: 0, in: center)
        try number.set(3)
        let text = GroupValue("mixed", default: "none", in: center)
        #expect(text.value == "none")
        #expect(center.statistics.valuesRejected == 1)
        #expect(throws: WormholeError.self) { try text.set("three") }
        #expect(number.value == 3)
        try text.reset()
        #expect(number.value == 0 && text.value == "none")
        try text.set("three")
        #expect(text.value == "three")
    }

    @Test("a value set through its property in one process is seen in another; a failed set leaves it as it was")
    func bindableSetter() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let unread = GroupValue("unread", default: 0, in: center)
        let changed = DispatchSemaphore(value: 0)
        _ = withObservationTracking({ unread.value }, onChange: { changed.signal() })
        unread.value = 9
        #expect(changed.wait(timeout: .now() + 20) == .success, "this process's observation is told")
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "unread"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output.last == "9")
        // A value of another type is not overwritten: the setter logs and counts, and throws nothing.
        let text = GroupValue("unread", default: "none", in: center)
        text.value = "nine"
        #expect(center.statistics.valueWritesFailed == 1)
        #expect(unread.value == 9)
    }

    @Test("reading a value off the main thread makes the process no listener; a read that tracks changes does")
    func readOnce() async throws {
        let container = TemporaryContainer()
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "k", "--set", "4"])
        #expect(try await writer.awaitExit() == 0)
        let center = try GroupNotificationCenter(containerURL: container.url)
        // A widget's timeline provider: read once, on a thread that is not the main one, with no flag.
        let once = GroupValue("k", default: 0, in: center)
        #expect(try await onDispatchThread { once.value } == 4)
        #expect(GroupValue("k", default: 0, in: center, tracksChanges: false).value == 4)
        #expect(center.listenerStatus().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.path + "/listeners").filter { !$0.hasPrefix(".") }.isEmpty)
        let tracked = GroupValue("k", default: 0, in: center, tracksChanges: true)
        #expect(try await onDispatchThread { tracked.value } == 4)
        #expect(center.listenerStatus().count == 1)
    }

    @Test("a value read on the main actor with no flag sees another process's change through Observation, on .main")
    @MainActor func observedByDefault() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let value = GroupValue("shown", default: 0, in: center, queue: .main)
        let (changes, changed) = AsyncStream.makeStream(of: Bool.self)
        // What a SwiftUI view's body does: read the value inside Observation tracking, on the main thread.
        let first = withObservationTracking({ value.value }, onChange: { changed.yield(true) })
        #expect(first == 0)
        #expect(center.listenerStatus().count == 1, "the main thread's read started watching")
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "shown", "--set", "7"])
        #expect(try await writer.awaitExit() == 0)
        let told = Task { () -> Bool? in
            for await told in changes { return told }
            return nil
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(30))
            changed.finish()
        }
        #expect(await told.value == true, "Observation was told of the other process's change")
        deadline.cancel()
        #expect(value.value == 7)
    }

    @Test("values never steps back: this process and another update while two sequences read, checks running side by side",
          .timeLimit(.minutes(10)))
    func valuesInOrder() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        // A concurrent queue: the observer's checks run side by side, and beside the timer's.
        let queue = OperationQueue()
        let value = GroupValue("order", default: 0, in: center, queue: queue)
        let each = 300, total = 2 * each
        let first = Task { await read(value.values, until: total) }
        let writer = try Peer("wormhole-test-peer", ["value-add", "--container", container.path, "--name", "order", "--count", "\(each)"])
        try await onDispatchThread { for _ in 0..<(each / 2) { try value.update { $0 += 1 } } }
        // A sequence started in the middle of the changes.
        let second = Task { await read(value.values, until: total) }
        try await onDispatchThread { for _ in 0..<(each - each / 2) { try value.update { $0 += 1 } } }
        #expect(try await writer.awaitExit(timeout: 120) == 0)
        for seen in [await first.value, await second.value] {
            // Each update adds one, so the values are the versions' order.
            let back = zip(seen, seen.dropFirst()).first { $0.0 >= $0.1 }
            #expect(back == nil, "stepped back from \(back?.0 ?? 0) to \(back?.1 ?? 0) in \(seen.count) values")
            #expect(seen.last == total, "the last value yielded is the final one")
        }
        #expect(value.value == total)
    }

    /// The values `sequence` yields until `last`, or until `seconds` pass.
    private func read(_ sequence: GroupValues<Int>, until last: Int, seconds: Int = 120) async -> [Int] {
        let reader = Task {
            var seen: [Int] = []
            for await value in sequence {
                seen.append(value)
                if value >= last { break }
            }
            return seen
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds))
            reader.cancel()
        }
        defer { timer.cancel() }
        return await reader.value
    }

    @Test("nil is null to untyped readers (wormhole value, the announcement); the string \"$null\" stays a string")
    func nilIsNull() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let listener = try Peer("wormhole", [
            "listen", "--container", container.path, "--name", GroupValue<String?>.notificationName(for: "opt").rawValue,
            "--count", "2",
        ])
        try await listener.awaitError(containing: "listening")
        let optional = GroupValue<String?>("opt", default: "default", in: center)
        try optional.set(nil)
        #expect(optional.value == nil, "nil, not the default")
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "opt"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output == ["null"])

        let setter = try Peer("wormhole", ["value", "--container", container.path, "--name", "opt", "--set", #""$null""#])
        #expect(try await setter.awaitExit() == 0)
        #expect(optional.value == "$null")
        let again = try Peer("wormhole", ["value", "--container", container.path, "--name", "opt"])
        #expect(try await again.awaitExit() == 0)
        #expect(again.output == [#""$null""#])

        #expect(try await listener.awaitExit() == 0)
        let announced = listener.jsonLines().map { ($0["userInfo"] as? [String: Any])?["value"] as Any }
        #expect(announced.count == 2)
        #expect(announced.first is NSNull, "\(listener.output)")
        #expect(announced.last as? String == "$null", "\(listener.output)")
    }

    @Test("nil and \"$null\" inside a value: another process sees null and the string; a new center reads them back")
    func nilInside() async throws {
        struct Profile: Codable, Equatable {
            var nickname: String?
            var tags: [String?]
        }
        let container = TemporaryContainer()
        let listener = try Peer("wormhole", [
            "listen", "--container", container.path, "--name", GroupValue<Profile>.notificationName(for: "profile").rawValue,
            "--count", "1",
        ])
        try await listener.awaitError(containing: "listening")
        let written = Profile(nickname: "$null", tags: ["a", nil, "$null"])
        try GroupValue("profile", default: Profile(nickname: nil, tags: []), in: try GroupNotificationCenter(containerURL: container.url))
            .set(written)
        #expect(try await listener.awaitExit() == 0)
        let stored = try #require((listener.jsonLines().first?["userInfo"] as? [String: Any])?["value"] as? [String: Any])
        #expect(stored["nickname"] as? String == "$null")
        let tags = try #require(stored["tags"] as? [Any])
        #expect(tags.count == 3 && tags[0] as? String == "a" && tags[1] is NSNull && tags[2] as? String == "$null")
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("profile", default: Profile(nickname: nil, tags: []), in: center).value == written)
        #expect(center.statistics.valuesRejected == 0)
    }

    @Test("values stored in the earlier format, where nil is the string \"$null\", read as written; an update stores the current one")
    func earlierFormat() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        /// Stores `value` as earlier versions did: through PropertyListEncoder, with no "format" key.
        func storeEarlier<T: Encodable>(_ value: T, as name: String) throws {
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            let list = try PropertyListSerialization.propertyList(from: try encoder.encode(["value": value]), format: nil)
            let stored = try #require((list as? [String: Any])?["value"])
            let archive = try UserInfoCodec.encode(["value": stored, "version": 1], maximumSize: Limits.maximumPayloadSize)
            let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: name), object: nil, userInfo: archive)
            #expect(try ValueStore(container: center.endpoint.container, name: name).publish(frame.encoded(), version: 1))
        }
        try storeEarlier(String?.none, as: "none")
        try storeEarlier(String?.some("hello"), as: "text")
        try storeEarlier([1, 2], as: "list")
        try storeEarlier(["when": Date(timeIntervalSinceReferenceDate: 7)], as: "dated")
        try storeEarlier("$null", as: "string")
        try storeEarlier(["a", nil, 1.5] as [AnyValueSample?], as: "mixed")

        #expect(GroupValue<String?>("none", default: "default", in: center).value == nil)
        #expect(GroupValue<String?>("text", default: nil, in: center).value == "hello")
        #expect(GroupValue("list", default: [Int](), in: center).value == [1, 2])
        #expect(GroupValue("dated", default: [String: Date](), in: center).value == ["when": Date(timeIntervalSinceReferenceDate: 7)])
        // Where a String is asked for, "$null" can only have been a string (PropertyListDecoder refused it).
        #expect(GroupValue("string", default: "default", in: center).value == "$null")
        #expect(GroupValue("mixed", default: [], in: center).value == ["a", nil, 1.5] as [AnyValueSample?])
        for (name, printed) in [("none", "null"), ("text", #""hello""#), ("list", "[1,2]")] {
            let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", name])
            #expect(try await reader.awaitExit() == 0)
            #expect(reader.output == [printed], "\(name)")
        }
        #expect(center.statistics.valuesRejected == 0)

        // An update reads the earlier format and writes the current one.
        try GroupValue("list", default: [Int](), in: center).update { $0.append(3) }
        let frame = try #require(try ValueStore(container: center.endpoint.container, name: "list").latest().frame)
        let userInfo = try UserInfoCodec.decode(try #require(frame.userInfo), allowed: .groupValue)
        #expect(userInfo["format"] as? Int == 2)
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "list"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output == ["[1,2,3]"])
    }

    @Test("every Codable shape round-trips exactly through the stored tree: integers at their limits, reals, nil, enums, subclasses")
    func shapes() throws {
        let container = TemporaryContainer()
        let written = Shapes()
        try GroupValue("shapes", default: Shapes.empty, in: try GroupNotificationCenter(containerURL: container.url)).set(written)
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("shapes", default: Shapes.empty, in: center).value == written)
        #expect(center.statistics.valuesRejected == 0)
        let derived = Derived(base: 4, extra: "x")
        try GroupValue("derived", default: Derived(base: 0, extra: ""), in: center).set(derived)
        #expect(GroupValue("derived", default: Derived(base: 0, extra: ""), in: center).value == derived)
    }

    @Test("a stored tree that does not fit the type is an error saying where, never a trap or a changed number")
    func misfits() {
        func fails<T: Decodable>(_ type: T.Type, _ tree: Any) -> Bool {
            (try? ValueTreeDecoder.decode(type, from: tree)) == nil
        }
        #expect(fails(Int8.self, NSNumber(value: 300)))
        #expect(fails(UInt64.self, NSNumber(value: -1)))
        #expect(fails(Int.self, NSNumber(value: 1.5)))
        #expect(fails(Int.self, NSNumber(value: true)))
        #expect(fails(Bool.self, NSNumber(value: 1)))
        #expect(fails(Int64.self, NSNumber(value: UInt64.max)))
        #expect(fails(Int.self, NSNull()))
        #expect(fails(String.self, NSNull()))
        #expect(fails([String: Int].self, [1: 2] as [AnyHashable: Any]))
        #expect(fails([Int].self, ["a": 1]))
        #expect(fails(Shapes.self, ["int8": 1]))
        #expect((try? ValueTreeDecoder.decode(Int.self, from: NSNumber(value: 2.0))) == 2, "a whole real is an integer")
        #expect((try? ValueTreeDecoder.decode(UInt64.self, from: NSNumber(value: UInt64.max))) == .max)
        #expect((try? ValueTreeDecoder.decode(String?.self, from: "$null")) == "$null")
        #expect((try? ValueTreeDecoder.decode(String?.self, from: "$null", nullStrings: true)) == .some(nil))
        #expect((try? ValueTreeDecoder.decode(String?.self, from: NSNull())) == .some(nil))
    }

    @Test("a value stored in a later format reads as the default, counted, and is not overwritten by update")
    func laterFormat() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let archive = try UserInfoCodec.encode(["value": 5, "version": 1, "format": 3], maximumSize: Limits.maximumPayloadSize)
        let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: "later"), object: nil, userInfo: archive)
        #expect(try ValueStore(container: center.endpoint.container, name: "later").publish(frame.encoded(), version: 1))
        let value = GroupValue("later", default: 0, in: center)
        #expect(value.value == 0)
        #expect(center.statistics.valuesRejected == 1)
        #expect(throws: WormholeError.self) { try value.update { $0 += 1 } }
    }

    @Test("a later format that keeps its value under another key, or the current one with no value, is not read as unset")
    func formatWithoutValue() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let userInfos: [[String: Any]] = [["v": 5, "version": 1, "format": 3], ["version": 1, "format": 2], ["version": 1, "format": true]]
        for (index, userInfo) in userInfos.enumerated() {
            let name = "later\(index)"
            let archive = try UserInfoCodec.encode(userInfo, maximumSize: Limits.maximumPayloadSize)
            let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: name), object: nil, userInfo: archive)
            let store = ValueStore(container: center.endpoint.container, name: name)
            #expect(try store.publish(frame.encoded(), version: 1))
            let value = GroupValue(name, default: 0, in: center)
            #expect(value.value == 0)
            #expect(center.statistics.valuesRejected == index + 1, "\(userInfo)")
            #expect(throws: WormholeError.self, "\(userInfo)") { try value.update { $0 += 1 } }
            // Still the version another process stored: nothing was written over it.
            #expect(try store.latest().version == 1)
        }
    }

    @Test("a value that holds itself, or nests deeper than an archive carries, is refused by set, not a crash")
    func cyclicValue() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let value = GroupValue<Link?>("link", default: nil, in: center)
        let cycle = Link()
        cycle.next = cycle
        #expect { try value.set(cycle) } throws: { ($0 as? WormholeError)?.code == .unsupportedValue }
        let chain = (0..<10_000).reduce(Link()) { inner, _ in
            let outer = Link()
            outer.next = inner
            return outer
        }
        #expect { try value.set(chain) } throws: { ($0 as? WormholeError)?.code == .unsupportedValue }
        #expect(value.value == nil, "nothing was stored")
    }

    @Test("a forged current-format value that does not fit reads as the default, counted: null, a huge integer, a wrong type")
    func forgedCurrentFormat() throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let deep = (0..<100).reduce(NSNumber(value: 1) as Any) { inner, _ in [inner] }
        let stored: [Any] = [NSNull(), NSNumber(value: UInt64.max), NSNumber(value: true), "7", [7], ["value": 7], deep]
        for (index, tree) in stored.enumerated() {
            let name = "forged\(index)"
            let archive = try UserInfoCodec.encode(["value": tree, "version": 1, "format": 2], maximumSize: Limits.maximumPayloadSize)
            let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: name), object: nil, userInfo: archive)
            #expect(try ValueStore(container: center.endpoint.container, name: name).publish(frame.encoded(), version: 1))
            #expect(GroupValue(name, default: -1, in: center).value == -1, "\(tree)")
            #expect(center.statistics.valuesRejected == index + 1, "\(tree)")
        }
        // Where they fit: null is nil, and "$null" in this format a string.
        for (name, tree) in [("null", NSNull()), ("text", "$null")] as [(String, Any)] {
            let archive = try UserInfoCodec.encode(["value": tree, "version": 1, "format": 2], maximumSize: Limits.maximumPayloadSize)
            let frame = Frame(poster: 1, sequence: 1, name: GroupValueName.notification(for: name), object: nil, userInfo: archive)
            #expect(try ValueStore(container: center.endpoint.container, name: name).publish(frame.encoded(), version: 1))
        }
        #expect(GroupValue<String?>("null", default: "default", in: center).value == nil)
        #expect(GroupValue<String?>("text", default: nil, in: center).value == "$null")
    }
}

/// A string or a real, in a value of the earlier format.
private enum AnyValueSample: Codable, Equatable, ExpressibleByStringLiteral, ExpressibleByFloatLiteral {
    case text(String), real(Double)

    init(stringLiteral value: String) { self = .text(value) }
    init(floatLiteral value: Double) { self = .real(value) }

    init(from decoder: any Decoder) throws {
        let single = try decoder.singleValueContainer()
        if let text = try? single.decode(String.self) { self = .text(text) } else { self = .real(try single.decode(Double.self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        switch self {
        case .text(let text): try single.encode(text)
        case .real(let real): try single.encode(real)
        }
    }
}

/// A value of every shape `Codable` gives.
private struct Shapes: Codable, Equatable {
    enum Choice: Codable, Equatable {
        case none, pair(Int, String), named(label: String?)
    }

    var int8: Int8 = -128
    var uint8: UInt8 = 255
    var int64: Int64 = .min
    var uint64: UInt64 = .max
    var uint: UInt = .max
    var float: Float = 0.1
    var double: Double = 1.0
    var tiny: Double = .leastNonzeroMagnitude
    var flag = true
    var text = "$null"
    var missing: String? = nil
    var date = Date(timeIntervalSinceReferenceDate: 1.5)
    var data = Data([0, 1, 2, 255])
    var map: [Int: String] = [1: "one", -2: "minus two"]
    var list: [Int?] = [1, nil, 3]
    var nested: [[String?]] = [[nil], [], ["a"]]
    var choices: [Choice] = [.none, .pair(1, "x"), .named(label: nil), .named(label: "y")]

    static let empty = Shapes(int8: 0, uint8: 0, int64: 0, uint64: 0, uint: 0, float: 0, double: 0, tiny: 0, flag: false, text: "",
                              missing: nil, date: Date(timeIntervalSinceReferenceDate: 0), data: Data(), map: [:], list: [], nested: [],
                              choices: [])
}

/// A subclass that encodes its superclass through `superEncoder()`.
// Safe because every property is a constant.
private class Base: Codable, @unchecked Sendable {
    let base: Int
    init(base: Int) { self.base = base }
}

// Safe because every property is a constant.
private final class Derived: Base, Equatable, @unchecked Sendable {
    let extra: String
    private enum Keys: String, CodingKey { case extra }

    init(base: Int, extra: String) {
        self.extra = extra
        super.init(base: base)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        extra = try container.decode(String.self, forKey: .extra)
        try super.init(from: try container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(extra, forKey: .extra)
        try super.encode(to: container.superEncoder())
    }

    static func == (left: Derived, right: Derived) -> Bool { left.base == right.base && left.extra == right.extra }
}

/// A linked list of classes, which can hold itself.
private final class Link: Codable, @unchecked Sendable {
    var next: Link?
}
