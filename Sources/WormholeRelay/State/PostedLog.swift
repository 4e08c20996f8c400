import Foundation
import Wormhole

/// What the relay posted into its group since it last saved its state, one record per notification appended as
/// it is posted: `relay/<identity>/posted`. A record is one `write` of 24 bytes (link sequence, poster,
/// sequence, big-endian), so a relay killed after posting has almost always recorded it too. In the window left,
/// between the post and its record, a kill makes the next run post that notification again, as the same poster
/// and sequence, which the listeners drop. Folded into the state and emptied once the state is saved.
struct PostedLog {
    static let recordSize = 24
    static let maximumSize = Limits.relayPostedLogSize

    let url: URL
    private var handle: FileHandle?

    init(url: URL) {
        self.url = url
    }

    /// The records the log holds, in order; a record cut short at the end (a kill in the middle of a write) is
    /// left out.
    func records(log: (String) -> Void) -> [(link: UInt64, poster: UInt64, sequence: UInt64)] {
        let data: Data
        do {
            guard let read = try StateFile(url: url, limit: Self.maximumSize).read() else { return [] }
            data = read
        } catch {
            log("relay log \(url.path) not read (\(error)); notifications posted just before the last stop may be posted again")
            return []
        }
        let bytes = [UInt8](data)
        var records: [(UInt64, UInt64, UInt64)] = []
        var offset = 0
        func field(_ at: Int) -> UInt64 { bytes[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        while offset + Self.recordSize <= bytes.count {
            records.append((field(offset), field(offset + 8), field(offset + 16)))
            offset += Self.recordSize
        }
        return records
    }

    /// Appends one record, in one write.
    mutating func append(link: UInt64, poster: UInt64, sequence: UInt64) throws {
        if handle == nil {
            // Whatever is at the name holds no record of this run (the log was emptied when the state was saved):
            // made anew, so that a FIFO put there is not opened, which would wait for a reader for ever.
            try? FileManager.default.removeItem(at: url)
            guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw RelayLinkError(.failed, "\(url.path) cannot be made")
            }
            let opened = try FileHandle(forWritingTo: url)
            try opened.seekToEnd()
            handle = opened
        }
        var record = [UInt8]()
        record.reserveCapacity(Self.recordSize)
        for value in [link, poster, sequence] {
            for shift in stride(from: 56, through: 0, by: -8) { record.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        try handle?.write(contentsOf: record)
    }

    /// Empties the log, once the state holds what it said; it stays open for the next record.
    mutating func clear() {
        if let handle {
            do {
                try handle.truncate(atOffset: 0)
                return
            } catch {
                try? handle.close()
                self.handle = nil
            }
        }
        try? FileManager.default.removeItem(at: url)
    }
}
