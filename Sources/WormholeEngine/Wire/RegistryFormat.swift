/// A registry entry file's bytes (`registry/<id>`), big-endian:
/// ```
/// "WHRE"  version:u8  transport:u8 (1 sequenced packets, 2 datagrams)  listener:u64  pid:i32  lastSeen:i64
/// hasIdentity:u8 [identity: u32 length + UTF-8]
/// count:u32  count × { hasName:u8 [name: u32 length + UTF-8]  hasObject:u8 [object: u32 length + UTF-8] }
/// crc32:u32 of everything before it
/// ```
package enum RegistryFormat {
    static let version: UInt8 = 4
    static let magic = Array("WHRE".utf8)

    package static func encode(_ entry: RegistryEntry) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + entry.subscriptions.count * 32)
        writer.write(magic)
        writer.write(version)
        writer.write(transportCode(entry.transport))
        writer.write(entry.listener)
        writer.write(entry.pid)
        writer.write(entry.lastSeen)
        writeOptional(entry.identity, to: &writer)
        writer.write(UInt32(entry.subscriptions.count))
        for subscription in entry.subscriptions {
            writeOptional(subscription.name, to: &writer)
            writeOptional(subscription.object, to: &writer)
        }
        writer.write(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// The size ``encode(_:)`` gives `entry`, without encoding it.
    package static func encodedSize(of entry: RegistryEntry) -> Int {
        func optional(_ value: String?) -> Int { value.map { 5 + $0.utf8.count } ?? 1 }
        let subscriptions = entry.subscriptions.reduce(0) { $0 + optional($1.name) + optional($1.object) }
        return magic.count + 1 + 1 + 8 + 4 + 8 + optional(entry.identity) + 4 + subscriptions + 4
    }

    /// Decodes one entry file.
    /// - Throws: ``WormholeError/Code/corruptData`` when the bytes are torn or malformed.
    package static func decodeEntry(_ bytes: [UInt8]) throws(WormholeError) -> RegistryEntry {
        guard bytes.count >= 35, bytes.starts(with: magic) else {
            throw WormholeError(.corruptData, "registry entry does not start with its header")
        }
        var trailer = ByteReader(bytes, from: bytes.count - 4)
        let checksum = try trailer.read(UInt32.self, "registry entry checksum")
        guard CRC32.checksum(bytes[0..<(bytes.count - 4)]) == checksum else {
            throw WormholeError(.corruptData, "registry entry checksum does not match")
        }
        var reader = ByteReader(bytes, from: 4, to: bytes.count - 4)
        let version = try reader.read(UInt8.self, "registry entry version")
        guard version == Self.version else {
            throw WormholeError(.corruptData, "registry entry has unknown version \(version)")
        }
        let code = try reader.read(UInt8.self, "transport")
        guard let transport = transport(code) else {
            throw WormholeError(.corruptData, "registry entry names unknown transport \(code)")
        }
        let listener = try reader.read(UInt64.self, "listener")
        let pid = try reader.read(Int32.self, "pid")
        let lastSeen = try reader.read(Int64.self, "last seen")
        let identity = try readOptional(&reader, "identity")
        let count = try reader.readLength("subscription count")
        guard count <= reader.remaining / 2 else {
            throw WormholeError(.corruptData, "registry entry claims \(count) subscriptions")
        }
        var subscriptions: [Subscription] = []
        subscriptions.reserveCapacity(count)
        for _ in 0..<count {
            let name = try readOptional(&reader, "name")
            let object = try readOptional(&reader, "object")
            subscriptions.append(Subscription(name: name, object: object))
        }
        guard reader.remaining == 0 else { throw WormholeError(.corruptData, "registry entry has bytes after its end") }
        return RegistryEntry(
            listener: listener, pid: pid, subscriptions: subscriptions, identity: identity, lastSeen: lastSeen,
            transport: transport)
    }

    private static func transportCode(_ transport: SocketKind) -> UInt8 {
        switch transport {
        case .sequencedPacket: 1
        case .datagram: 2
        }
    }

    private static func transport(_ code: UInt8) -> SocketKind? {
        switch code {
        case 1: .sequencedPacket
        case 2: .datagram
        default: nil
        }
    }

    private static func writeOptional(_ value: String?, to writer: inout ByteWriter) {
        guard let value else {
            writer.write(UInt8(0))
            return
        }
        writer.write(UInt8(1))
        writer.writeField(value)
    }

    private static func readOptional(_ reader: inout ByteReader<[UInt8]>, _ what: String) throws(WormholeError) -> String? {
        switch try reader.read(UInt8.self, what) {
        case 0: return nil
        case 1: return try reader.readString(what, limit: Frame.maximumNameLength)
        case let flag: throw WormholeError(.corruptData, "registry entry has \(what) flag \(flag)")
        }
    }
}
