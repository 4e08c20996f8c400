import Foundation
import Wormhole

/// What the relay posted into its group since it last saved its state, one record per notification appended as
/// it is posted: `relay/<client identifier>/posted`, 0600. A record is one `write` of 24 bytes (link sequence,
/// poster, sequence, big-endian), so a relay killed after posting has almost always recorded it too. In the
/// window left, between the post and its record, a kill makes the next run post that notification again, as the
/// same poster and sequence, which the listeners drop. Folded into the state and emptied once the state is saved.
package struct PostedLog {
    static let recordSize = 24
    static let maximumSize = Limits.relayPostedLogSize
    static let name = "posted"

    let folder: ContainerFolder
    private var file: ContainerFolder.AppendedFile?

    package init(folder: ContainerFolder) {
        self.folder = folder
    }

    private var path: String { folder.path + "/" + Self.name }

    /// The records the log holds, in order; a record cut short at the end (a kill in the middle of a write), and
    /// one whose link sequence no relay reaches, are left out.
    package func records(log: (String) -> Void) -> [(link: UInt64, poster: UInt64, sequence: UInt64)] {
        let bytes: [UInt8]
        do {
            guard let read = try folder.read(Self.name, limit: Self.maximumSize) else { return [] }
            bytes = read
        } catch {
            log("relay log \(path) not read (\(error)); notifications posted just before the last stop may be posted again")
            return []
        }
        var records: [(UInt64, UInt64, UInt64)] = []
        var offset = 0
        func field(_ at: Int) -> UInt64 { bytes[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        while offset + Self.recordSize <= bytes.count {
            let link = field(offset)
            if link > 0, link < Limits.relayHighestLink { records.append((link, field(offset + 8), field(offset + 16))) }
            offset += Self.recordSize
        }
        return records
    }

    /// Appends one record, in one write.
    package mutating func append(link: UInt64, poster: UInt64, sequence: UInt64) throws {
        if file == nil {
            // Opened without following a link; what is there and is not a file of one link (a FIFO, which would
            // wait for a reader for ever, a folder, a link) is moved aside. Whatever it holds is no record of this
            // run (the log was emptied when the state was saved).
            let opened = try folder.openForAppending(Self.name)
            if let moved = opened.movedAside {
                RelayLog.write("\(path) was not a regular file of one link; moved aside to \(moved), where it stays")
            }
            try opened.file.empty()
            file = opened.file
        }
        var record = [UInt8]()
        record.reserveCapacity(Self.recordSize)
        for value in [link, poster, sequence] {
            for shift in stride(from: 56, through: 0, by: -8) { record.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        try file?.append(record)
    }

    /// Empties the log, once the state holds what it said; it stays open for the next record.
    package mutating func clear() {
        if let file {
            do {
                try file.empty()
                return
            } catch {
                self.file = nil
            }
        }
        // Only a regular file goes: anything else at the name is not the relay's, and stays.
        try? folder.remove(Self.name)
    }
}
