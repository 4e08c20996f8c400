// The matched floor of each kind of observer: a raw sequenced-packet connection between two processes whose
// receive thread waits in poll(2) before each read on three descriptors, as a Wormhole listener's does (its wake
// pipe, its listening socket, a poster's connection; here two idle pipes and the connection), and hands each
// message to where that kind's block runs, the same way an application without Wormhole would: called on the
// thread itself, `OperationQueue.addOperation`, `DispatchQueue.main.async`, or an `AsyncStream` continuation whose
// consumer is a task. The handler sends the next message, so each message pays the hop once, as each
// notification of the observer-kind ping-pong (ObserverCost) does. No registry, no codec, no frame: one byte a
// message.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

enum RawHop {
    /// `raw-hop-run`: listens at `path`, starts a `raw-hop-echo` of `kind`, and runs `rounds` round trips, each
    /// ping sent by the handler of the pong before it; then closes its end, which ends the echo, and waits for it.
    static func run(path: String, kind: ObserverCost.Kind, rounds: Int) throws -> Never {
        unlink(path)
        let listener = try makeSocket(path: path, listening: true)
        // Started and reaped without Foundation's `Process`, so that its CPU time counts (``spawnSelfChild(_:)``).
        let echo = try spawnSelfChild(["raw-hop-echo", "--path", path, "--kind", kind.rawValue])
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { throw BenchError("accept: errno \(errno)") }
        close(listener)
        let count = Mutex(0)
        serve(fd, kind) {
            let sent = count.withLock { count in
                count += 1
                return count
            }
            if sent <= rounds {
                sendByte(fd)
            } else if sent == rounds + 1 {
                shutdown(fd, Int32(SHUT_RDWR))
                var status: Int32 = 0
                exit(waitpid(echo, &status, 0) == echo && status == 0 ? 0 : 1)
            }
        }
    }

    /// `raw-hop-echo`: connects to `path` and answers each ping with a pong from a handler of `kind`; sends a
    /// first pong when connected, which starts the loop; ends when the other side closes.
    static func echo(path: String, kind: ObserverCost.Kind) throws -> Never {
        let fd = try makeSocket(path: path, listening: false)
        sendByte(fd)
        serve(fd, kind) { sendByte(fd) }
    }

    /// Reads `fd` on a thread of its own, waiting in poll(2) before each read, and hands each message to where
    /// `kind`'s blocks run; serves the main queue for the main actor, else parks this thread. Exits when the other
    /// side closes (0), or after ten minutes (1).
    private static func serve(
        _ fd: Int32, _ kind: ObserverCost.Kind, _ handler: @escaping @Sendable () -> Void
    ) -> Never {
        let hand: @Sendable () -> Void
        switch kind {
        case .receiveThread:
            hand = handler
        case .operationQueue:
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            hand = { queue.addOperation(handler) }
        case .mainActor:
            hand = { DispatchQueue.main.async(execute: handler) }
        case .sequence:
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            Task.detached {
                for await _ in stream { handler() }
            }
            hand = { continuation.yield() }
        }
        // Two pipes nobody writes, in the places of a listener's wake pipe and listening socket.
        var idle: [Int32] = [0, 0, 0, 0]
        guard pipe(&idle[0]) == 0, pipe(&idle[2]) == 0 else { exit(1) }
        let (wakePipe, listening) = (idle[0], idle[2])
        let reader = Thread {
            var byte: UInt8 = 0
            var entries = [
                pollfd(fd: wakePipe, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listening, events: Int16(POLLIN), revents: 0),
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                guard poll(&entries, 3, -1) >= 0 || errno == EINTR else { exit(1) }
                let read = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
                if read == 0 { exit(0) }
                if read < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    exit(0)
                }
                hand()
            }
        }
        reader.start()
        DispatchQueue.global().asyncAfter(deadline: .now() + 600) { exit(1) }
        if kind == .mainActor {
            // Under valgrind, as ObserverCost's runs do (WORMHOLE_BENCH_RUN_LOOP): it does not survive dispatchMain().
            if ProcessInfo.processInfo.environment["WORMHOLE_BENCH_RUN_LOOP"] != nil { RunLoop.main.run() }
            dispatchMain()
        }
        while true { sleep(1000) }
    }

    private static func sendByte(_ fd: Int32) {
        var byte: UInt8 = 1
        #if canImport(Glibc)
        _ = send(fd, &byte, 1, Int32(MSG_NOSIGNAL))
        #else
        _ = send(fd, &byte, 1, 0)
        #endif
    }

    /// A sequenced-packet socket bound to `path` and listening, or connected to it.
    private static func makeSocket(path: String, listening: Bool) throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_SEQPACKET, 0)
        #endif
        guard fd >= 0 else { throw BenchError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw BenchError("path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                listening ? bind(fd, address, length) : connect(fd, address, length)
            }
        }
        guard result == 0 else { throw BenchError("\(listening ? "bind" : "connect") \(path): errno \(errno)") }
        if listening, listen(fd, 1) != 0 { throw BenchError("listen: errno \(errno)") }
        return fd
    }
}
