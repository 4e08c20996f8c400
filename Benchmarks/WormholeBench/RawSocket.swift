// The floor: a raw AF_UNIX SOCK_SEQPACKET socket between two processes, carrying bytes of the same size as
// Wormhole's frames, with no registry and no codec.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

enum RawSocket {
    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        return address
    }

    private static func makeSocket() -> Int32 {
        #if canImport(Glibc)
        return socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        #else
        return socket(AF_UNIX, SOCK_SEQPACKET, 0)
        #endif
    }

    /// The peer: echoes every message; a message starting with "F" counts toward a flood, acknowledged with "A".
    static func peer(path: String) -> Never {
        let listener = makeSocket()
        var address = address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else { exit(1) }
        let connection = accept(listener, nil, nil)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var flooded = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if n <= 0 { exit(0) }
            if buffer[0] == UInt8(ascii: "F") {
                flooded += 1
                let total = Int(buffer[1]) << 24 | Int(buffer[2]) << 16 | Int(buffer[3]) << 8 | Int(buffer[4])
                if flooded == total {
                    flooded = 0
                    _ = send(connection, "A", 1, 0)
                }
            } else {
                _ = buffer.withUnsafeBytes { send(connection, $0.baseAddress, n, 0) }
            }
        }
    }

    static func connect(path: String) -> Int32? {
        let fd = makeSocket()
        var address = address(path)
        for _ in 0..<200 {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 { return fd }
            usleep(10_000)
        }
        return nil
    }

    /// One-way latency (half a round trip), in nanoseconds, sorted.
    static func latencies(_ fd: Int32, rounds: Int, size: Int) -> [UInt64] {
        var message = [UInt8](repeating: 0x50, count: max(size, 5))
        var reply = [UInt8](repeating: 0, count: 1 << 16)
        var samples: [UInt64] = []
        for _ in 0..<rounds {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = message.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, 0) }
            _ = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            samples.append((DispatchTime.now().uptimeNanoseconds - start) / 2)
        }
        return samples.sorted()
    }

    /// Messages a second from this process to every one of `fds`, each message sent to all of them.
    static func fanOut(_ fds: [Int32], count: Int, size: Int) -> Double {
        var message = floodMessage(count: count, size: size)
        var reply = [UInt8](repeating: 0, count: 16)
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count {
            for fd in fds { _ = message.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, 0) } }
        }
        for fd in fds { _ = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
        return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    private static func floodMessage(count: Int, size: Int) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: max(size, 5))
        message[0] = UInt8(ascii: "F")
        message[1] = UInt8(truncatingIfNeeded: count >> 24)
        message[2] = UInt8(truncatingIfNeeded: count >> 16)
        message[3] = UInt8(truncatingIfNeeded: count >> 8)
        message[4] = UInt8(truncatingIfNeeded: count)
        return message
    }

    /// Messages a second from this process to the peer.
    static func throughput(_ fd: Int32, count: Int, size: Int) -> Double {
        var message = floodMessage(count: count, size: size)
        var reply = [UInt8](repeating: 0, count: 16)
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { _ = message.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, 0) } }
        _ = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
}
