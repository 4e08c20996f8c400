import Foundation
import Testing
@testable import Wormhole
@testable import WormholeEngine

/// A durable listener's hand-over keeps the files it took until its observers ran what they were handed
/// (``SpoolAcknowledgement``). Real files in a real spool folder; the observer queue driven directly.
@Suite("Spool acknowledgement: files stay until what was handed over ran")
struct SpoolAcknowledgementTests {
    private static let taken = "0000000000000001-0000000000000005" + SpoolFolder.takenSuffix

    private static func folder(_ temporary: TemporaryContainer) throws -> (SpoolFolder, path: String) {
        let container = try Container(path: temporary.path)
        let folder = try SpoolFolder(listener: 7, in: container, create: true)
        let path = temporary.path + "/spool/" + RegistryEntry.spoolName(7) + "/"
        try #require(FileManager.default.createFile(atPath: path + taken, contents: Data([1, 2, 3])))
        return (folder, path)
    }

    private static func note(_ i: Int) -> (note: SendableNotification, bytes: Int, frame: Frame?) {
        let frame = Frame(poster: 5, sequence: UInt64(i), name: "n", object: nil, userInfo: nil)
        return (SendableNotification(name: "n", object: nil, userInfo: nil), 64, frame)
    }

    @Test("a sequence's consumer that took a notification keeps the files until it asks for the next")
    func sequenceTakeIsNotRun() async throws {
        let temporary = TemporaryContainer()
        let (folder, path) = try Self.folder(temporary)
        let acknowledgement = SpoolAcknowledgement(folder: folder)
        let observerQueue = ObserverQueue(wake: nil)
        observerQueue.append([Self.note(1), Self.note(2)], backlog: nil, acknowledging: acknowledgement)
        acknowledgement.seal(removing: [Self.taken])
        #expect(await observerQueue.next() != nil)
        // The loop body runs it now: a kill here must find it in the spool on the next run.
        #expect(FileManager.default.fileExists(atPath: path + Self.taken), "removed before the loop body ran it")
        #expect(await observerQueue.next() != nil)
        #expect(FileManager.default.fileExists(atPath: path + Self.taken), "the second is running")
        observerQueue.end()
        #expect(!FileManager.default.fileExists(atPath: path + Self.taken), "the sequence ended: both ran")
    }

    @Test("a queue's drain keeps the files until its blocks returned; a later take of this run skips them")
    func drainKeepsUntilRun() async throws {
        let temporary = TemporaryContainer()
        let (folder, path) = try Self.folder(temporary)
        let acknowledgement = SpoolAcknowledgement(folder: folder)
        let ran = Recorder()
        let queue = OperationQueue()
        queue.isSuspended = true
        let observerQueue = ObserverQueue.onQueue(queue, serialQueue: DispatchQueue(label: "test")) { note in ran.block(note) }
        observerQueue.append([Self.note(1), Self.note(2)], backlog: nil, acknowledging: acknowledgement)
        acknowledgement.seal(removing: [Self.taken])
        #expect(FileManager.default.fileExists(atPath: path + Self.taken))
        #expect(folder.takeSegments(renaming: true).isEmpty, "no later drain of this run reads them again")
        queue.isSuspended = false
        _ = try await ran.wait(for: 2)
        try await pollUntil("the files went") { !FileManager.default.fileExists(atPath: path + Self.taken) }
    }
}
