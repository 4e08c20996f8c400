import Foundation
import Testing
@testable import WormholeEngine

/// The removal of a folder the library made for itself (the demo's temporary container): everything inside goes,
/// and nothing is reached through a link.
@Suite("Folder tree removal")
struct FolderTreeTests {
    @Test("a folder with files, folders and links inside goes; what a link points to outside stays")
    func removesWithoutFollowingLinks() throws {
        let outside = TemporaryContainer("outside")
        let tree = TemporaryContainer("tree")
        let files = FileManager.default
        try Data("keep".utf8).write(to: outside.url.appendingPathComponent("notes.txt"))
        try files.createDirectory(atPath: outside.path + "/photos", withIntermediateDirectories: false)
        try Data("a".utf8).write(to: tree.url.appendingPathComponent("a"))
        try files.createDirectory(atPath: tree.path + "/inner/deeper", withIntermediateDirectories: true)
        try Data("b".utf8).write(to: tree.url.appendingPathComponent("inner/deeper/b"))
        try files.createSymbolicLink(atPath: tree.path + "/inner/to-outside", withDestinationPath: outside.path)
        try files.createSymbolicLink(atPath: tree.path + "/notes", withDestinationPath: outside.path + "/notes.txt")

        try FolderTree.remove(atPath: tree.path)

        #expect(!files.fileExists(atPath: tree.path))
        #expect(try String(contentsOfFile: outside.path + "/notes.txt", encoding: .utf8) == "keep")
        #expect(files.fileExists(atPath: outside.path + "/photos"))
    }

    @Test("a link in the folder's own place is refused, and what it points to stays")
    func refusesALinkInItsPlace() throws {
        let outside = TemporaryContainer("outside")
        let parent = TemporaryContainer("parent")
        try Data("keep".utf8).write(to: outside.url.appendingPathComponent("notes.txt"))
        try FileManager.default.createSymbolicLink(atPath: parent.path + "/link", withDestinationPath: outside.path)

        #expect(throws: WormholeError.self) { try FolderTree.remove(atPath: parent.path + "/link") }
        #expect(FileManager.default.fileExists(atPath: outside.path + "/notes.txt"))
    }
}
