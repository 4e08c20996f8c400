#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The versions of one group value: the folder `values/<name>/`, holding files `v-<version>` (16 hex digits),
/// each a spool segment of one frame whose userInfo is the value.
///
/// A new version is written whole under a temporary name and then linked to the next version's name:
/// `link(2)` fails when another process took that version first, so of several processes updating at once
/// exactly one wins each version, and the others read again and retry. No lock is held, so a process stopped or
/// killed in the middle of its update blocks nobody, and never leaves a version that is claimed but empty.
/// The newest few versions are kept whole. Older ones are emptied but keep their names for a while (256
/// versions), since a name that is free again could be claimed by a process that read long ago (one stopped
/// in the middle of its update), and its update would be lost behind newer ones; a claim that far behind the
/// newest is taken back and tried again.
struct ValueStore: Sendable {
    static let versionPrefix = "v-"
    /// Emptied versions kept behind the newest, so that their numbers cannot be claimed again.
    static let keptNames: UInt64 = 256
    /// Versions kept behind the newest.
    static let keptVersions: UInt64 = 8
    static let maximumFileSize = SpoolRecord.headerSize + SpoolRecord.recordHeaderSize + SpoolRecord.maximumFrameSize

    let container: Container
    let name: String
    let folderName: String

    init(container: Container, name: String) {
        self.container = container
        self.name = name
        folderName = RetainedStore.fileName(for: name)
    }

    private func openFolder(create: Bool) throws(WormholeError) -> CInt {
        try Container.openDirectory(folderName, relativeTo: container.valuesDescriptor, create: create, what: "value")
    }

    /// The newest version and its frame; version 0 and no frame when nobody has written the value yet.
    func latest() throws(WormholeError) -> (version: UInt64, frame: Frame?) {
        let folder: CInt
        do throws(WormholeError) {
            folder = try openFolder(create: false)
        } catch where error.errno == ENOENT {
            return (0, nil)
        }
        defer { Sys.close(folder) }
        // A version emptied or removed between the listing and the read sends us round again.
        for _ in 0..<64 {
            let versions = try Sys.listDirectory(folder, limit: 100_000).compactMap(Self.version(fromName:)).sorted(by: >)
            guard let newest = versions.first else { return (0, nil) }
            // The newest is always whole: only versions behind the kept ones are emptied.
            do throws(WormholeError) {
                let bytes = try StoredFile.read(Self.fileName(newest), in: folder, limit: Self.maximumFileSize)
                // Emptied since it was listed: newer versions came meanwhile.
                if bytes.isEmpty { continue }
                guard let record = SpoolRecord.decodeAll(bytes).frames.first, let frame = try? Frame(decoding: record),
                    frame.kind == .notification, frame.name == GroupValueName.notification(for: name)
                else {
                    throw WormholeError(.corruptData, "version \(newest) of value \(name) is damaged")
                }
                return (newest, frame)
            } catch where error.errno == ENOENT {
                continue
            }
        }
        throw WormholeError(.system, "value \(name) kept changing under its reader")
    }

    /// Publishes `frame` as `version`, the one after the newest; false when another process took it first, or
    /// when the number is so far behind the newest that the caller's read was stale (it must read again).
    func publish(_ frame: [UInt8], version: UInt64) throws(WormholeError) -> Bool {
        let folder = try openFolder(create: true)
        defer { Sys.close(folder) }
        guard try StoredFile.create(Self.fileName(version), in: folder, with: SpoolRecord.segment([frame])) else { return false }
        let versions = try Sys.listDirectory(folder, limit: 100_000).compactMap(Self.version(fromName:))
        if let newest = versions.max(), version &+ Self.keptNames < newest {
            try? Sys.removeFile(Self.fileName(version), relativeTo: folder)
            return false
        }
        prune(folder, versions, below: version)
        return true
    }

    /// Empties the versions behind the kept ones (replacing each with an empty file, so its name stays taken),
    /// and removes the names far behind.
    private func prune(_ folder: CInt, _ versions: [UInt64], below version: UInt64) {
        for old in versions where old &+ Self.keptVersions <= version {
            let name = Self.fileName(old)
            if old &+ Self.keptNames < version {
                try? Sys.removeFile(name, relativeTo: folder)
            } else if let status = try? Sys.status(name, relativeTo: folder, followLinks: false), status.st_size > 0 {
                try? StoredFile.replace(name, in: folder, with: [])
            }
        }
        if version % 256 == 0 { StoredFile.removeStaleTemporaries(in: folder) }
    }

    static func fileName(_ version: UInt64) -> String { versionPrefix + RegistryEntry.hex(version) }

    static func version(fromName name: String) -> UInt64? {
        guard name.hasPrefix(versionPrefix) else { return nil }
        return RegistryEntry.listener(fromName: String(name.dropFirst(versionPrefix.count)))
    }

}

/// The names a group value goes by.
enum GroupValueName {
    /// The notification that announces each change of the value `name`.
    static func notification(for name: String) -> String { "wormhole.value." + name }
}
