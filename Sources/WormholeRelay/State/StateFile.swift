import Foundation
import Wormhole

/// A file of the relay's in its folder of the container, reached through the folder's descriptor and never
/// through a link: read whole within a limit, written whole to a new file (0600) renamed into place (no lock is
/// ever held), so a reader sees the old content or the new, never a torn one.
struct StateFile {
    let folder: ContainerFolder
    let name: String
    let limit: Int

    /// Where it is, for messages.
    var path: String { folder.path + "/" + name }

    /// The file's bytes; nil when it does not exist.
    /// - Throws: When it is not a regular file (a link is not followed), is larger than `limit`, or cannot be read.
    func read() throws -> Data? {
        try folder.read(name, limit: limit).map { Data($0) }
    }

    /// Writes `data` in place of what the file held. Something else at its name (a folder, a link, a FIFO) is not
    /// the relay's: it is moved aside (``ContainerFolder/replace(_:with:)``), never removed nor written through.
    func write(_ data: Data) throws {
        if let moved = try folder.replace(name, with: [UInt8](data)) {
            RelayLog.write("\(path) was not a regular file; moved aside to \(moved), where it stays")
        }
    }
}
