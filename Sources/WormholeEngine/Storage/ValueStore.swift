
/// The versions of one group value: the folder `values/<name>/`, holding files `v-<version>` (16 hex digits),
/// each a spool segment of one frame whose userInfo is the value.
///
/// A new version is written whole under a temporary name and then linked to the next version's name:
/// `link(2)` fails when another process took that version first, so of several processes updating at once
/// exactly one wins each version, and the others read again and retry. No lock is held, so a process stopped or
/// killed in the middle of its update blocks nobody, and never leaves a version that is claimed but empty.
/// The newest few versions are kept whole; a version another process damaged is skipped by readers and
/// claimed past by writers. Older ones are emptied but keep their names for a while (256
/// versions), since a name that is free again could be claimed by a process that read long ago (one stopped
/// in the middle of its update), and its update would be lost behind newer ones; a claim that far behind the
/// newest is taken back and tried again.
package struct ValueStore: Sendable {
    static let versionPrefix = "v-"
    static let maximumFileSize = SpoolRecord.headerSize + SpoolRecord.recordHeaderSize + SpoolRecord.maximumFrameSize

    let container: Container
    let name: String
    let folderName: String

    init(container: Container, name: String) {
        self.container = container
        self.name = name
        folderName = RetainedStore.fileName(for: name)
    }

    private func openFolder(create: Bool) throws(WormholeError) -> OwnedDescriptor {
        try Container.openDirectory(folderName, relativeTo: container.valuesDescriptor, create: create, what: "value")
    }

    /// What a read of the value found.
    struct Reading {
        /// The newest version's number, whole or not: the next version is claimed after it.
        var newest: UInt64
        /// The newest whole version (its number, and its frame); 0 and nil when there is none (nobody wrote the
        /// value, or every version near the newest is damaged): the value is then its default.
        var version: UInt64
        var frame: Frame?
        /// Versions newer than `version` that were skipped as damaged, with why.
        var damaged: [(version: UInt64, reason: String)] = []
    }

    /// The newest whole version and its frame, and the newest version's number.
    ///
    /// A version that is not whole (emptied, truncated, a FIFO, a folder, a sparse or oversized file, a frame of
    /// another value) is skipped: the reading goes down to the next, within ``Limits/valueKeptNames`` of the newest. It is left
    /// where it is, since a name near the newest that became free again could be claimed by a writer that read
    /// before it, and writers claim past it. Versions are emptied only behind newer whole ones, so a reading
    /// that skipped one lists the folder again: when the newest changed meanwhile, it reads again.
    func latest() throws(WormholeError) -> Reading {
        let opened: OwnedDescriptor
        do throws(WormholeError) {
            opened = try openFolder(create: false)
        } catch where error.systemErrno == .noSuchFile {
            return Reading(newest: 0, version: 0, frame: nil)
        }
        let folder = opened.descriptor
        var planted: [(version: UInt64, reason: String)] = []
        for _ in 0..<64 {
            let versions = try listVersions(folder, planted: &planted)
            guard let newest = versions.first else { return Reading(newest: 0, version: 0, frame: nil, damaged: planted) }
            var reading = Reading(newest: newest, version: 0, frame: nil, damaged: planted)
            for version in versions where newest - version <= Limits.valueKeptNames {
                switch try readVersion(version, in: folder) {
                case .whole(let frame):
                    reading.version = version
                    reading.frame = frame
                case .damaged(let reason):
                    reading.damaged.append((version, reason))
                    continue
                case .gone:
                    continue
                }
                break
            }
            if reading.damaged.isEmpty && reading.frame != nil { return reading }
            // Something was skipped: whole only if nothing newer came meanwhile.
            if try listVersions(folder, planted: &planted).first == newest {
                if reading.frame == nil { reading.version = newest }
                return reading
            }
        }
        throw WormholeError(.system, "value \(name) kept changing under its reader")
    }

    private enum VersionRead {
        case whole(Frame)
        /// Removed since it was listed: newer versions came meanwhile.
        case gone
        case damaged(String)
    }

    /// Reads one version file without blocking (a FIFO is refused at once) and without reading more than its
    /// header of a file whose size its header does not account for (a sparse or padded one).
    private func readVersion(_ version: UInt64, in folder: Descriptor) throws(WormholeError) -> VersionRead {
        let opened: OpenedFile
        do throws(WormholeError) {
            opened = try StoredFile.openForReading(Self.fileName(version), in: folder, limit: Self.maximumFileSize)
        } catch where error.systemErrno == .noSuchFile {
            return .gone
        } catch where !Self.isThisProcesssLack(error) {
            return .damaged("\(error)")
        }
        let size = opened.status.size
        // Only versions behind newer whole ones are emptied, and the reading stops at the first whole one.
        if size == 0 { return .damaged("version \(version) of value \(name) is empty") }
        let headSize = SpoolRecord.headerSize + SpoolRecord.recordHeaderSize
        guard size > headSize else { return .damaged("version \(version) of value \(name) is cut short") }
        var head = [UInt8](repeating: 0, count: headSize)
        let fd = opened.file.descriptor
        let got: Int
        do throws(WormholeError) {
            got = try head.withUnsafeMutableBytes { raw in Result { () throws(WormholeError) in try fd.readAll(into: raw, at: 0) } }.get()
        } catch where !Self.isThisProcesssLack(error) {
            return .damaged("version \(version) of value \(name) cannot be read: \(error)")
        }
        guard got == headSize, SpoolRecord.key(ofHeader: head[0..<SpoolRecord.headerSize]) != nil,
            let (length, _) = SpoolRecord.recordHeader(head[SpoolRecord.headerSize...]), length == size - headSize
        else { return .damaged("version \(version) of value \(name) is not one whole record") }
        let bytes: [UInt8]
        do throws(WormholeError) {
            bytes = try fd.readWhole(limit: size)
        } catch where !Self.isThisProcesssLack(error) {
            return .damaged("version \(version) of value \(name) cannot be read: \(error)")
        }
        guard let record = SpoolRecord.decodeAll(bytes).frames.first, let frame = try? Frame(decoding: record),
            frame.kind == .notification, frame.name == GroupValueName.notification(for: name)
        else { return .damaged("version \(version) of value \(name) fails its check") }
        return .whole(frame)
    }

    /// Whether `error` says this process lacks something (descriptors, memory, buffers) or was interrupted, rather
    /// than that the file is bad: such an error is thrown, since skipping a whole version that could not be read
    /// now would base an update on an older one. Any other (an I/O error, a file of another kind, one that changed under its reader)
    /// makes the version damaged, and writers claim past it.
    private static func isThisProcesssLack(_ error: WormholeError) -> Bool {
        error.systemErrno.map { Errno.outOfResources.contains($0) || $0 == .interrupted || $0 == .wouldBlock } ?? false
    }

    /// The versions of the folder, newest first: only those of the value's history.
    ///
    /// Every version within ``Limits/valueKeptNames`` of the newest keeps its name, so the history is one cluster of names
    /// no more than that apart, which either starts near 1 or holds at least half that many names. Names at or
    /// past ``maximumVersion`` were planted: removed. A cluster above the history that is neither was planted
    /// too: ignored (never removed: a name is removed only when no process could have written it). Both are
    /// reported in `planted`, once each.
    private func listVersions(_ folder: Descriptor, planted: inout [(version: UInt64, reason: String)]) throws(WormholeError) -> [UInt64] {
        func report(_ version: UInt64, _ reason: String) {
            if !planted.contains(where: { $0.version == version }) { planted.append((version, reason)) }
        }
        var versions: [UInt64] = []
        for version in try Sys.listDirectory(folder).compactMap(Self.version(fromName:)) {
            guard version >= Self.maximumVersion else {
                versions.append(version)
                continue
            }
            try? Sys.removeFile(Self.fileName(version), relativeTo: folder)
            report(version, "version number \(version) is past the end of the range; removed")
        }
        versions.sort(by: >)
        while !versions.isEmpty {
            var end = 0
            while end + 1 < versions.count, versions[end] - versions[end + 1] <= Limits.valueKeptNames { end += 1 }
            if versions[end] <= Limits.valueKeptNames + 1 || end + 1 >= Int(Limits.valueKeptNames / 2) { break }
            for version in versions[0...end] { report(version, "version \(version) is detached from the value's history; ignored") }
            versions.removeFirst(end + 1)
        }
        return versions
    }

    /// The version after `newest`.
    /// - Throws: ``WormholeError/Code/corruptData`` at the end of the range (reached only through planted names).
    static func successor(of newest: UInt64) throws(WormholeError) -> UInt64 {
        guard newest + 1 < maximumVersion else {
            throw WormholeError(.corruptData, "group value versions reach the end of their range (\(newest)): planted names")
        }
        return newest + 1
    }

    /// Publishes `frame` as `version`, the one after the newest; false when another process took it first, or
    /// when the number is so far behind the newest that the caller's read was stale (it must read again).
    func publish(_ frame: [UInt8], version: UInt64) throws(WormholeError) -> Bool {
        let opened = try openFolder(create: true)
        let folder = opened.descriptor
        guard try StoredFile.create(Self.fileName(version), in: folder, with: SpoolRecord.segment([frame])) else { return false }
        var planted: [(version: UInt64, reason: String)] = []
        let versions = try listVersions(folder, planted: &planted)
        if let newest = versions.first, newest > version, newest - version > Limits.valueKeptNames {
            try? Sys.removeFile(Self.fileName(version), relativeTo: folder)
            return false
        }
        prune(folder, versions, below: version)
        return true
    }

    /// Empties the versions behind the kept ones (replacing each with an empty file, so its name stays taken),
    /// and removes the names far behind.
    private func prune(_ folder: Descriptor, _ versions: [UInt64], below version: UInt64) {
        for old in versions where old < version && version - old >= Limits.valueKeptVersions {
            let name = Self.fileName(old)
            if version - old > Limits.valueKeptNames {
                try? Sys.removeFile(name, relativeTo: folder)
            } else if let status = try? Sys.status(name, relativeTo: folder, followLinks: false), status.size > 0 {
                try? StoredFile.replace(name, in: folder, with: [])
            }
        }
        if version % 256 == 0 { StoredFile.removeStaleTemporaries(in: folder) }
    }

    static func fileName(_ version: UInt64) -> String { versionPrefix + FileName.hex(version) }

    // MARK: Listing

    /// The names of the values that hold one: whose newest whole version was set, not reset. A folder named by a
    /// hash lists as the name its versions' frames hold, when that name hashes to it. A folder that is not a
    /// value's (see ``StoredNames``), or none of whose versions near the newest is whole, is skipped; a value
    /// reset to its default, or whose folder holds no version, is neither listed nor skipped. The first
    /// ``Limits/maximumListedNames`` entries of `values/` are looked at.
    /// - Throws: A system error when `values/` cannot be listed.
    package static func names(in container: Container) throws(WormholeError) -> StoredNames {
        var found = StoredNames()
        for entry in try Sys.listDirectory(container.valuesDescriptor) where !entry.hasPrefix(StoredFile.temporaryPrefix) {
            let spelled = StoredNames.spelledName(entry)
            guard spelled != nil || StoredNames.isHashedName(entry) else {
                found.skip(entry, "is not the name of a value")
                continue
            }
            do throws(WormholeError) {
                let folder = try Container.openDirectory(entry, relativeTo: container.valuesDescriptor, create: false, what: "value")
                var named = spelled
                if named == nil { named = try hashedName(entry, in: folder.descriptor) }
                guard let named else {
                    found.skip(entry, "holds no whole version that names a value hashed to it")
                    continue
                }
                let reading = try ValueStore(container: container, name: named).latest()
                if let frame = reading.frame {
                    if frame.userInfo != nil { found.names.append(named) }
                } else if let damaged = reading.damaged.first {
                    found.skip(entry, "no whole version: \(damaged.reason)")
                }
            } catch where error.systemErrno == .noSuchFile {
                continue
            } catch {
                found.skip(entry, "\(error)")
            }
        }
        found.sort()
        return found
    }

    /// The name of the value whose folder `entry` is named by a hash: the one a whole version near the newest
    /// names, if it hashes to `entry`; nil when none does.
    private static func hashedName(_ entry: String, in folder: Descriptor) throws(WormholeError) -> String? {
        let versions = try Sys.listDirectory(folder).compactMap(version(fromName:)).filter { $0 < maximumVersion }.sorted(by: >)
        guard let newest = versions.first else { return nil }
        // Compared as bytes: a name that starts with a combining mark makes one character with the prefix's dot.
        let prefix = GroupValueName.notification(for: "").utf8
        for version in versions.prefix(Int(Limits.valueKeptVersions)) where newest - version <= Limits.valueKeptNames {
            guard let bytes = try? StoredFile.read(fileName(version), in: folder, limit: maximumFileSize),
                let record = SpoolRecord.decodeAll(bytes).frames.first, let frame = try? Frame(decoding: record),
                frame.kind == .notification, frame.name.utf8.starts(with: prefix)
            else { continue }
            let name = String(decoding: frame.name.utf8.dropFirst(prefix.count), as: UTF8.self)
            if RetainedStore.fileName(for: name) == entry { return name }
        }
        return nil
    }

    /// The end of the version numbers: no process counts that far (2^62 updates), so a name at or past it was
    /// planted; it is removed, and every version has a successor that cannot overflow.
    static let maximumVersion: UInt64 = 1 << 62

    static func version(fromName name: String) -> UInt64? {
        guard name.hasPrefix(versionPrefix) else { return nil }
        return FileName.value(ofHex: String(name.dropFirst(versionPrefix.count)))
    }

}

/// The names a group value goes by.
package enum GroupValueName {
    /// The notification that announces each change of the value `name`.
    package static func notification(for name: String) -> String { "wormhole.value." + name }
}

/// The userInfo a group value's version holds, which its announcement carries too.
package enum ValueFormat {
    /// The value itself.
    package static let valueKey = "value"
    /// The version's number, an `Int`.
    package static let versionKey = "version"
    /// How the value is encoded, an `Int`: 2 for a ``ValueTreeLeaf`` tree, where nil is `NSNull` and a string
    /// is a string. Absent in values stored by earlier versions (format 1), which went through
    /// `PropertyListEncoder`: nil is the string `"$null"` there.
    package static let formatKey = "format"
    /// The format this version writes.
    package static let current = 2
}
