/// The header at the start of a poster's lease file (`lease-<poster>` in a spool folder), big-endian:
/// ```
/// "WHLS"  version:u8  0:u8 0:u8 0:u8  pid:u32  0:u32  start:u64  namespace:u64           (32 bytes)
/// ```
/// It names the process that holds the lease (``ProcessMark``), so that a reader can tell a lease whose poster
/// is gone. The file's size past the header is the bytes the lease reserves; they are never written (a sparse
/// file), so only the header takes room.
package enum LeaseFormat {
    static let magic = Array("WHLS".utf8)
    static let version: UInt8 = 1
    package static let headerSize = 32

    /// The header of a lease `holder` holds.
    package static func header(_ holder: ProcessMark) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize)
        writer.write(magic)
        writer.write([version, 0, 0, 0])
        writer.write(UInt32(bitPattern: holder.pid))
        writer.write(UInt32(0))
        writer.write(holder.start)
        writer.write(holder.namespace)
        return writer.bytes
    }

    /// The process a lease's first ``headerSize`` bytes name. Throws ``WormholeError/Code/corruptData`` when they
    /// are not such a header (a lease written by an older Wormhole, which had none, a file cut short, or another
    /// magic or version), or name no process (a pid of 0 or less). The reserved fields are not checked.
    package static func holder(_ bytes: [UInt8]) throws(WormholeError) -> ProcessMark {
        var reader = ByteReader(bytes)
        try reader.readHeader(magic: magic, version: version, "lease")
        let pid = Int32(bitPattern: try reader.read(UInt32.self, "lease pid"))
        _ = try reader.read(UInt32.self, "lease header")
        let start = try reader.read(UInt64.self, "lease start")
        let namespace = try reader.read(UInt64.self, "lease namespace")
        guard pid > 0 else { throw WormholeError(.corruptData, "names pid \(pid), no process") }
        return ProcessMark(pid: pid, start: start, namespace: namespace)
    }
}
