import Foundation
import Wormhole

/// A file of the relay's in its folder of the container, reached through the folder's descriptor and never
/// through a link: read whole within a limit, written whole to a new file (0600) renamed into place (no lock is
/// ever held), so a reader sees the old content or the new, never a torn one.
package struct StateFile {
    package let folder: ContainerFolder
    package let name: String
    package let limit: Int

    package init(folder: ContainerFolder, name: String, limit: Int) {
        self.folder = folder
        self.name = name
        self.limit = limit
    }

    /// Where it is, for messages.
    package var path: String { folder.path + "/" + name }

    /// The file's bytes; nil when it does not exist.
    /// - Throws: When it is not a regular file (a link is not followed), is larger than `limit`, or cannot be read.
    package func read() throws -> Data? {
        try folder.read(name, limit: limit).map { Data($0) }
    }

    /// Writes `data` in place of what the file held. Something else at its name (a folder, a link, a FIFO) is not
    /// the relay's: it is moved aside (``ContainerFolder/replace(_:with:)``), never removed nor written through.
    package func write(_ data: Data) throws {
        if let moved = try folder.replace(name, with: [UInt8](data)) {
            RelayLog.write("\(path) was not a regular file; moved aside to \(moved), where it stays")
        }
    }
}
