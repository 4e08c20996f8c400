#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `stat(2)` says of a file, in the terms the library asks about. Every field comes from a file system that
/// any process with access to the container can shape: sizes and counts are held within `Int` (a sparse file
/// can claim any size, and `Int` has 32 bits on watchOS) rather than trapping on a conversion.
package struct FileStatus {
    /// What the system filled in (``SystemStatus``, the C library's `struct stat`).
    let system: SystemStatus

    init(_ system: SystemStatus) {
        self.system = system
    }

    private var type: mode_t { system.st_mode & S_IFMT }

    package var isRegularFile: Bool { type == S_IFREG }
    package var isDirectory: Bool { type == S_IFDIR }
    package var isSocket: Bool { type == S_IFSOCK }
    /// A symbolic link itself, as `fstatat(2)` with `AT_SYMLINK_NOFOLLOW` sees one.
    package var isSymbolicLink: Bool { type == S_IFLNK }

    /// The size the file claims, in bytes; `Int.max` past what `Int` holds.
    package var size: Int { Int(clamping: system.st_size) }

    /// The bytes its blocks take on disk (512-byte blocks, as `stat(2)` counts them); `Int.max` past what `Int`
    /// holds. Less than ``size`` for a sparse file.
    package var allocatedBytes: Int {
        let (bytes, overflow) = Int(clamping: system.st_blocks).multipliedReportingOverflow(by: 512)
        return overflow ? .max : bytes
    }

    /// How many names the file has (hard links).
    package var linkCount: Int { Int(clamping: system.st_nlink) }

    /// The user who owns it.
    package var owner: UInt32 { UInt32(system.st_uid) }

    /// Whether its group, or anyone else, may write it (the permission bits `0o020`, `0o002`).
    var isWritableByGroup: Bool { system.st_mode & 0o020 != 0 }
    var isWritableByOthers: Bool { system.st_mode & 0o002 != 0 }

    /// The block size the file system prefers for reading it.
    package var preferredBlockSize: Int { Int(clamping: system.st_blksize) }

    /// The last modification time, in nanoseconds since 1970. Any process can set a file's time to any value: one
    /// past what 64 bits of nanoseconds hold (before 1678 or after 2262) reads as the nearest end of that range.
    package var modifiedNanoseconds: Int64 { nanoseconds(modifiedTime.seconds, modifiedTime.nanoseconds) }

    /// How long ago, by the wall clock, the file was last modified, in nanoseconds: negative for a time in the
    /// future, and never past the ends of `Int64`, whatever time another process set.
    package var ageNanoseconds: Int64 { nanosecondsSince(modifiedNanoseconds) }

    /// Which file this is: its device and inode. `dev_t` is signed on Darwin: taken by its bit pattern.
    package var identity: FileIdentity {
        FileIdentity(device: UInt64(truncatingIfNeeded: system.st_dev), inode: UInt64(truncatingIfNeeded: system.st_ino))
    }
}

/// A file's device and inode: the same path names another file once these differ.
package struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}
