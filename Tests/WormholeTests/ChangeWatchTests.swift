#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization
import Testing
@testable import WormholeEngine

/// The system's notices of changed files (`ChangeWatch`: inotify here), which wake an idle listener when its
/// socket file, its registry entry or its bell changes. Linux names what changed in a folder; these tests check
/// the names it gives.
@Suite("Change watches: the system tells of changed files", .throttled)
struct ChangeWatchTests {
    /// What one watch was told, in order.
    private final class Told: Sendable {
        private let changes = Mutex<[ChangeWatch.Change]>([])

        var record: @Sendable (ChangeWatch.Change) -> Void { { [self] change in changes.withLock { $0.append(change) } } }
        var all: [ChangeWatch.Change] { changes.withLock { $0 } }
        var names: [String?] { all.map(\.name) }
    }

    @Test("a folder's watch names each file made, renamed over another and removed in it, and hears nothing once cancelled")
    func folderWatch() async throws {
        let folder = TemporaryContainer("watched")
        let directory = try Sys.open(folder.path, .directory)
        let told = Told()
        let watch = try ChangeWatch.folder(directory.descriptor, changed: told.record)
        #expect(watch.isWatching)

        try Data("1".utf8).write(to: URL(fileURLWithPath: folder.path + "/a"))
        try await pollUntil("the new file named") { told.names.contains("a") }
        try Data("2".utf8).write(to: URL(fileURLWithPath: folder.path + "/.staging"))
        let before = told.all.count
        try #require(rename(folder.path + "/.staging", folder.path + "/a") == 0)
        try await pollUntil("the file renamed over it named") { told.names.dropFirst(before).contains("a") }
        let beforeRemoval = told.all.count
        try #require(unlink(folder.path + "/a") == 0)
        try await pollUntil("the removed file named") { told.names.dropFirst(beforeRemoval).contains("a") }

        watch.cancel()
        #expect(!watch.isWatching)
        let cancelled = told.all.count
        try Data().write(to: URL(fileURLWithPath: folder.path + "/c"))
        // A second watch of the folder hears what follows; the thread tells changes in order, so once it heard
        // "d", the first would have heard "c" before, were it still told.
        let second = Told()
        let other = try ChangeWatch.folder(directory.descriptor, changed: second.record)
        try Data().write(to: URL(fileURLWithPath: folder.path + "/d"))
        try await pollUntil("the second watch hears the next file") { second.names.contains("d") }
        #expect(told.all.count == cancelled, "a cancelled watch hears nothing: \(told.names.dropFirst(cancelled))")
        other.cancel()
    }

    @Test("two watches of one folder (one kernel watch) both hear it; cancelling one leaves the other watching")
    func sharedFolder() async throws {
        let folder = TemporaryContainer("watched")
        let directory = try Sys.open(folder.path, .directory)
        let first = Told(), second = Told()
        let one = try ChangeWatch.folder(directory.descriptor, changed: first.record)
        let two = try ChangeWatch.folder(directory.descriptor, changed: second.record)
        try Data().write(to: URL(fileURLWithPath: folder.path + "/both"))
        try await pollUntil("both hear the file") { first.names.contains("both") && second.names.contains("both") }
        one.cancel()
        #expect(two.isWatching)
        try Data().write(to: URL(fileURLWithPath: folder.path + "/after"))
        try await pollUntil("the one left hears the next") { second.names.contains("after") }
        #expect(!first.names.contains("after"))
        two.cancel()
    }

    @Test("a file's watch tells a write as a write, and its removal as a change that ends the watch")
    func fileWatch() async throws {
        let folder = TemporaryContainer("watched")
        let directory = try Sys.open(folder.path, .directory)
        try Data(count: 8).write(to: URL(fileURLWithPath: folder.path + "/bell"))
        let told = Told()
        let watch = try ChangeWatch.file("bell", in: directory.descriptor, changed: told.record)
        let file = try Sys.open("bell", .writeOnly, relativeTo: directory.descriptor)
        let fd = file.descriptor
        try [UInt8](repeating: 7, count: 8).withUnsafeBytes { try fd.writeAll($0, at: 0) }
        try await pollUntil("the write told") { told.all.contains { $0.isWrite } }
        #expect(told.all.allSatisfy { $0.name == nil }, "a file's watch names nothing")
        #expect(watch.isWatching)

        let writes = told.all.count
        try #require(unlink(folder.path + "/bell") == 0)
        try await pollUntil("the removal told") { told.all.dropFirst(writes).contains { !$0.isWrite } }
        // The kernel lets the watch go once the file's last descriptor closes.
        _ = consume file
        try await pollUntil("the watch ended") { !watch.isWatching }
        watch.cancel()
    }

    @Test("a missing file cannot be watched: the caller is told, and looks for itself")
    func missingFile() throws {
        let folder = TemporaryContainer("watched")
        let directory = try Sys.open(folder.path, .directory)
        #expect(throws: WormholeError.self) { _ = try ChangeWatch.file("bell", in: directory.descriptor) { _ in } }
    }
}
