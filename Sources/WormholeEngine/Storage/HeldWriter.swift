/// A held file being written: a temporary segment, renamed into place once whole. Its descriptor closes as the
/// writer goes.

final class HeldWriter {
    let folder: SpoolFolder
    let temporary: String
    let key = UInt64.random(in: 0...UInt64.max)
    var offset = 0
    private let opened: OwnedDescriptor

    init?(folder: SpoolFolder) {
        guard let name = try? StoredFile.writeTemporary(SpoolRecord.header(key: key), in: folder.descriptor) else { return nil }
        do throws(WormholeError) {
            opened = try Sys.open(name, [.writeOnly, .noFollow], relativeTo: folder.descriptor)
        } catch {
            folder.remove(name)
            return nil
        }
        self.folder = folder
        temporary = name
        offset = SpoolRecord.headerSize
    }

    private var file: Descriptor { opened.descriptor }

    /// Appends `frame`'s record: its header and head, then its userInfo as it is (not copied behind them).
    func append(_ frame: Frame) -> Bool {
        let head = frame.encodedHead()
        let (fd, at, key) = (file, offset, key)
        let written = try? head.withRawBytes { (head) throws(WormholeError) -> Int in
            func write(_ archive: UnsafeRawBufferPointer) throws(WormholeError) -> Int {
                let prefix = SpoolRecord.header(head: head, rest: archive, key: key) + Array(head)
                try prefix.withRawBytes { (raw) throws(WormholeError) in try fd.writeAll(raw, at: at) }
                try fd.writeAll(archive, at: at + prefix.count)
                return prefix.count + archive.count
            }
            guard let userInfo = frame.userInfo else { return try write(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try userInfo.withBytes { (archive) throws(WormholeError) in try write(archive) }
        }
        guard let written else { return false }
        offset += written
        return true
    }

    /// Renames the file into place; false (and the file removed) when that fails.
    func publish(as name: String) -> Bool {
        do throws(WormholeError) {
            try Sys.renameFile(temporary, name, in: folder.descriptor)
            return true
        } catch {
            folder.remove(temporary)
            return false
        }
    }
}
