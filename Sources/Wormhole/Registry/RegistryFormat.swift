/// The registry file's bytes, big-endian:
/// ```
/// "WHRG"  version:u8  count:u32
/// count × { listener:u64  pid:i32  subscriptions:u32
///           subscriptions × { hasName:u8 [name: u32 length + UTF-8]  hasObject:u8 [object: u32 length + UTF-8] }
///           hasIdentity:u8 [identity: u32 length + UTF-8]  lastSeen:i64 }     (version 2; version 1 ends before)
/// crc32:u32 of everything before it
/// ```
enum RegistryFormat {
    static let version: UInt8 = 2

    static func encode(_ entries: [RegistryEntry]) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + entries.count * 64)
        writer.write(Array("WHRG".utf8))
        writer.write(version)
        writer.write(UInt32(entries.count))
        for entry in entries {
            writer.write(entry.listener)
            writer.write(entry.pid)
            writer.write(UInt32(entry.subscriptions.count))
            for subscription in entry.subscriptions {
                writeOptional(subscription.name, to: &writer)
                writeOptional(subscription.object, to: &writer)
            }
            writeOptional(entry.identity, to: &writer)
            writer.write(entry.lastSeen)
        }
        writer.write(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Decodes a registry; an empty file is an empty registry.
    /// - Throws: ``WormholeError/Code/corruptData`` when the bytes are torn or malformed.
    static func decode(_ bytes: [UInt8]) throws(WormholeError) -> [RegistryEntry] {
        guard !bytes.isEmpty else { return [] }
        guard bytes.count >= 13, bytes.starts(with: Array("WHRG".utf8)) else {
            throw WormholeError(.corruptData, "registry does not start with its header")
        }
        var trailer = ByteReader(bytes, from: bytes.count - 4)
        let checksum = try trailer.read(UInt32.self, "registry checksum")
        guard CRC32.checksum(bytes[0..<(bytes.count - 4)]) == checksum else {
            throw WormholeError(.corruptData, "registry checksum does not match")
        }
        var reader = ByteReader(bytes, from: 4, to: bytes.count - 4)
        let version = try reader.read(UInt8.self, "registry version")
        guard version == 1 || version == Self.version else {
            throw WormholeError(.corruptData, "registry has unknown version \(version)")
        }
        let count = Int(try reader.read(UInt32.self, "registry count"))
        guard count <= GroupNotificationCenter.maximumListeners else {
            throw WormholeError(.corruptData, "registry claims \(count) listeners")
        }
        var entries: [RegistryEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let listener = try reader.read(UInt64.self, "listener")
            let pid = try reader.read(Int32.self, "pid")
            let subscriptionCount = Int(try reader.read(UInt32.self, "subscription count"))
            guard subscriptionCount <= reader.remaining / 2 else {
                throw WormholeError(.corruptData, "registry entry claims \(subscriptionCount) subscriptions")
            }
            var subscriptions: [Subscription] = []
            subscriptions.reserveCapacity(subscriptionCount)
            for _ in 0..<subscriptionCount {
                let name = try readOptional(&reader, "name")
                let object = try readOptional(&reader, "object")
                subscriptions.append(Subscription(name: name, object: object))
            }
            var entry = RegistryEntry(listener: listener, pid: pid, subscriptions: subscriptions)
            if version >= 2 {
                entry.identity = try readOptional(&reader, "identity")
                entry.lastSeen = try reader.read(Int64.self, "last seen")
            }
            entries.append(entry)
        }
        guard reader.remaining == 0 else { throw WormholeError(.corruptData, "registry has bytes after its entries") }
        return entries
    }

    private static func writeOptional(_ value: String?, to writer: inout ByteWriter) {
        guard let value else {
            writer.write(UInt8(0))
            return
        }
        writer.write(UInt8(1))
        writer.writeField(value)
    }

    private static func readOptional(_ reader: inout ByteReader, _ what: String) throws(WormholeError) -> String? {
        switch try reader.read(UInt8.self, what) {
        case 0: return nil
        case 1: return try reader.readString(what, limit: Frame.maximumNameLength)
        case let flag: throw WormholeError(.corruptData, "registry has \(what) flag \(flag)")
        }
    }
}
