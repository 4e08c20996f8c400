import Foundation

/// A file of the relay's in the container: read whole within a limit, written whole to a temporary name and
/// renamed into place (no lock is ever held), so a reader sees the old content or the new, never a torn one.
struct StateFile {
    let url: URL
    let limit: Int

    /// The file's bytes; nil when it does not exist.
    /// - Throws: When it is not a regular file, is larger than `limit`, or cannot be read.
    func read() throws -> Data? {
        let values: URLResourceValues
        do {
            values = try url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) { return nil }
            throw error
        }
        guard values.isRegularFile == true else {
            throw RelayLinkError(.failed, "\(url.path) is not a regular file")
        }
        guard let size = values.fileSize, size <= limit else {
            throw RelayLinkError(.failed, "\(url.path) is larger than \(limit) bytes")
        }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let data = try handle.read(upToCount: limit + 1) ?? Data()
        guard data.count <= limit else { throw RelayLinkError(.failed, "\(url.path) grew past \(limit) bytes") }
        return data
    }

    /// Writes `data` in place of what the file held; something else at its name (a directory) is removed first.
    func write(_ data: Data) throws {
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            // The rename fails over a directory: one planted or left there is not the relay's, and goes.
            let type = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.type] as? FileAttributeType
            guard let type, type != .typeRegular else { throw error }
            remove()
            try data.write(to: url, options: .atomic)
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
