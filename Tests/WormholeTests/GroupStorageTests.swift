import Foundation
import Observation
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeUI

@Suite("Group storage: a group value as a property, shared by every wrapper, never throwing", .serialized, .throttled)
struct GroupStorageTests {
    @Test("reads what another process set, and sets what another process reads; each wrapper has its own default")
    func acrossProcesses() async throws {
        let container = TemporaryContainer()
        @GroupStorage("unread", container: container.url) var unread = 0
        @GroupStorage("unread", container: container.url) var badge = 5
        #expect(unread == 0 && badge == 5, "unset: each wrapper's own default")
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "unread", "--set", "7"])
        #expect(try await writer.awaitExit() == 0)
        #expect(unread == 7 && badge == 7)
        unread = 9
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "unread"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output == ["9"])
        // A process that uses the value through GroupValue shares it.
        let center = try GroupNotificationCenter(containerURL: container.url)
        #expect(GroupValue("unread", default: 0, in: center).value == 9)
    }

    @Test("an optional value reads nil until set; setting nil unsets it")
    func optional() async throws {
        let container = TemporaryContainer()
        @GroupStorage("title", container: container.url) var title: String?
        #expect(title == nil)
        title = "inbox"
        let reader = try Peer("wormhole", ["value", "--container", container.path, "--name", "title"])
        #expect(try await reader.awaitExit() == 0)
        #expect(reader.output == ["\"inbox\""])
        title = nil
        #expect(title == nil)
    }

    @Test("one center per container and one watching value per name and type, made on first use")
    func shared() throws {
        let container = TemporaryContainer()
        let values = SharedGroupValues(queue: nil)
        let place = SharedGroupValues.Container.folder(container.path)
        let first = try #require(values.value("n", of: Int.self, in: place))
        let again = try #require(values.value("n", of: Int.self, in: place))
        let text = try #require(values.value("n", of: String.self, in: place))
        let other = try #require(values.value("m", of: Int.self, in: place))
        #expect(first === again)
        #expect(ObjectIdentifier(first) != ObjectIdentifier(text) && first !== other)
        // Each wrapper made on that store reads the one value.
        let a = GroupStorage("n", in: place, default: 1, values: values)
        let b = GroupStorage("n", in: place, default: 2, values: values)
        a.wrappedValue = 3
        #expect(b.wrappedValue == 3 && first.value == 3)
        // A stored value of another type reads as that wrapper's default; the other reads it.
        let c = GroupStorage("n", in: place, default: "none", values: values)
        #expect(c.wrappedValue == "none")
        #expect(a.wrappedValue == 3)
    }

    @Test("a change by another process reaches Observation through the wrapper, as a view's body reads it")
    func observed() async throws {
        let container = TemporaryContainer()
        let storage = GroupStorage("seen", in: .folder(container.path), default: 0, values: SharedGroupValues(queue: nil))
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self)
        #expect(withObservationTracking({ storage.wrappedValue }, onChange: { continuation.yield() }) == 0)
        let writer = try Peer("wormhole", ["value", "--container", container.path, "--name", "seen", "--set", "4"])
        #expect(try await writer.awaitExit() == 0)
        let told = await withTaskGroup(of: Bool.self) { group in
            group.addTask { for await _ in changes { return true }; return false }
            group.addTask { try? await Task.sleep(for: .seconds(20)); return false }
            let first = await group.next() ?? false
            group.cancelAll()
            continuation.finish()
            return first
        }
        #expect(told, "onChange within 20 s")
        #expect(storage.wrappedValue == 4)
    }

    @Test("a container that cannot be opened shows the default, writes nothing, and is logged once and counted")
    func unavailable() throws {
        let container = TemporaryContainer()
        // A file where the folder should be.
        let path = container.path + "/file"
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let warnings = Mutex<[String]>([])
        GroupNotificationCenter.setWarningHandler { line in
            warnings.withLock { $0.append(line) }
            FileHandle.standardError.write(Data("wormhole: warning: \(line)\n".utf8))
        }
        defer { GroupNotificationCenter.setWarningHandler(nil) }
        let before = GroupStorageStatistics.current
        let values = SharedGroupValues(queue: nil)
        let storage = GroupStorage("x", in: .folder(path), default: 11, values: values)
        let again = GroupStorage("y", in: .folder(path), default: 12, values: values)
        #expect(storage.wrappedValue == 11)
        storage.wrappedValue = 3
        #expect(storage.wrappedValue == 11 && again.wrappedValue == 12)
        let after = GroupStorageStatistics.current
        let reason = WormholeError.Code.invalidContainer
        #expect((after.unavailableContainers[reason] ?? 0) - (before.unavailableContainers[reason] ?? 0) == 1,
                "one container, tried once: \(after)")
        #expect(after.defaultsShown - before.defaultsShown == 3)
        #expect(after.writesDropped - before.writesDropped == 1)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "", "nothing written")
        let said = warnings.withLock { $0 }.filter { $0.contains(path) }
        #expect(said.count == 1, "said once: \(said)")
        #expect(said.first?.contains("invalid container") == true)
    }
}
