#if canImport(Glibc)
#endif
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Wormhole
@testable import WormholeEngine
import WormholeTestSupport

@Suite("Large payloads passed as sealed memory files", .throttled)
struct SharedFrameTests {
    /// The checksum the test peer's listener prints for the blob of post `i` of `size` bytes.
    private func blobSum(_ i: Int, size: Int) -> Int {
        (0..<size).reduce(0) { $0 &+ Int(UInt8(truncatingIfNeeded: $1 &* 31 &+ i)) }
    }

    @Test("payloads over the socket's limit reach each running listener whole and in order, without the spool")
    func largePayloadsToRunningListeners() async throws {
        try #require(SharedFrame.isAvailable)
        let container = TemporaryContainer()
        // Two listeners: a post writes its memory file once, and both read it.
        let listeners = try (0..<2).map { _ in
            try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "big", "--count", "4"])
        }
        for listener in listeners { try await listener.awaitLines(1) }
        let size = 1 << 20
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "big",
                                                     "--payload", String(size), "--count", "4"])
        #expect(try await poster.awaitExit(timeout: 60) == 0)
        let report = try #require(poster.jsonLines().first)
        #expect(report["delivered"] as? Int == 8)
        #expect(report["spooled"] as? Int == 0)
        for listener in listeners {
            #expect(try await listener.awaitExit(timeout: 60) == 0)
            let received = listener.jsonLines().dropFirst()
            #expect(received.map { $0["i"] as? Int } == [0, 1, 2, 3])
            for line in received {
                let i = try #require(line["i"] as? Int)
                #expect(line["blobBytes"] as? Int == size)
                #expect(line["blobSum"] as? Int == blobSum(i, size: size))
            }
        }
    }

    @Test("a stopped listener gets at most 16 MiB of unread shared frames from a poster; the rest, and the small posts after them, are spooled in order")
    func stoppedListenerBound() async throws {
        try #require(SharedFrame.isAvailable)
        let container = TemporaryContainer()
        let listener = try Peer("wormhole-test-peer", ["listen", "--container", container.path, "--name", "big", "--count", "45"])
        try await listener.awaitLines(1)
        try listener.suspend()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let blob = Data(count: 1 << 20)
        var delivered = 0, spooled = 0
        for i in 0..<45 {
            // Forty large posts, then five small ones that must not overtake the large ones spooled before them.
            let userInfo: [AnyHashable: Any] = i < 40 ? ["i": i, "blob": blob] : ["i": i]
            let report = try center.postReporting(name: .init("big"), object: nil, userInfo: userInfo)
            delivered += report.delivered
            spooled += report.spooled
        }
        // Frames of a little over 1 MiB: the sixteenth would take the unread ones past 16 MiB.
        #expect(delivered >= 1 && delivered <= 16)
        #expect(spooled == 45 - delivered)
        listener.signal(SIGCONT)
        #expect(try await listener.awaitExit(timeout: 120) == 0)
        #expect(listener.jsonLines().dropFirst().map { $0["i"] as? Int } == (0..<45).map { $0 })
    }

    @Test("a large Data is read without a copy, each observer's is its own, and it outlives its poster")
    func largeDataToTwoObservers() async throws {
        try #require(SharedFrame.isAvailable)
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        // Two sets of allowed classes: the frame is decoded twice, and only one decoding may share its pages.
        let blobs = Mutex<[String: Data]>([:])
        let arrived = Recorder()
        let keep: (String) -> @Sendable (Notification) -> Void = { key in
            { note in
                if let blob = note.userInfo?["blob"] as? Data { blobs.withLock { $0[key] = blob } }
                arrived.block(note)
            }
        }
        let observers = [
            center.addObserver(forName: .init("big"), object: nil, queue: nil, using: keep("any")),
            center.addObserver(
                forName: .init("big"), object: nil, allowedClasses: [NSDictionary.self, NSString.self, NSNumber.self, NSData.self], queue: nil,
                using: keep("some")),
        ]
        defer { observers.forEach(center.removeObserver) }
        let size = 1 << 20
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "big",
                                                     "--payload", String(size), "--count", "1"])
        #expect(try await poster.awaitExit(timeout: 60) == 0)
        try await arrived.wait(for: 2)
        let expected = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var written = try #require(blobs.withLock { $0.removeValue(forKey: "any") })
        let kept = try #require(blobs.withLock { $0["some"] })
        #expect(written == expected && kept == expected)
        // The poster is gone: the bytes live on in this process. Written in place when this is the only
        // reference, as a Data over its own memory is: the other observer's must not change.
        written.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xEE) }
        #expect(written.allSatisfy { $0 == 0xEE })
        #expect(kept == expected)
        #expect(center.statistics.dropped == 0 && center.statistics.userInfoRejected == 0)
    }

    #if canImport(Glibc)
    @Test("a shared frame's userInfo is mapped: the first decoding shares its pages, a second copies them")
    func mappedUserInfoIsLentOnce() throws {
        let blob = Data((0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let archive = try UserInfoCodec.encode(["blob": blob, "small": Data([1, 2, 3])], maximumSize: 1 << 20)
        let frame = Frame(poster: 9, sequence: 1, name: "big", object: nil, userInfo: archive)
        let file = try SharedFrame.makeFile(head: frame.encodedHead(), userInfo: frame.userInfo)
        var recent = SharedFrame.RecentFiles(capacity: Limits.recentSharedFiles)
        let read = try message(for: frame.encoded()).withRawBytes { (bytes) throws(WormholeError) in
            try SharedFrame.read(bytes, file: file.descriptor, recent: &recent)
        }
        let received = try #require(read.userInfo)
        #expect(received.mapping != nil)
        /// Whether `address` lies in a mapping of a frame's memory file, as this process's map lists them.
        func inMemoryFile(_ address: UInt) throws -> Bool {
            // Read to its end: Foundation reads a /proc file of no size only once.
            let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
            defer { try? handle.close() }
            let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            return maps.split(separator: "\n").contains { line in
                let range = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt($0, radix: 16) }
                return line.contains("memfd:wormhole-frame") && range.count == 2 && (range[0]..<range[1]).contains(address)
            }
        }
        func decoded() throws -> (blob: Data, small: Data, address: UInt) {
            let userInfo = try UserInfoCodec.decode(received, allowed: .propertyList)
            let blob = try #require(userInfo["blob"] as? Data)
            let small = try #require(userInfo["small"] as? Data)
            return (blob, small, blob.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
        }
        var first = try decoded()
        let second = try decoded()
        #expect(try inMemoryFile(first.address) && !inMemoryFile(second.address))
        #expect(first.blob == blob && second.blob == blob && first.small == Data([1, 2, 3]))
        // Unique, so written in place: into this process's copy of the page, not the file nor the second value.
        first.blob.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xEE) }
        #expect(first.blob.allSatisfy { $0 == 0xEE } && second.blob == blob)
        #expect(try decoded().blob == blob)
    }
    #endif

    #if canImport(Glibc)
    /// Sends `messages` to the listener of the test process over one connection, as a hostile peer would, each
    /// with the descriptor given, if any.
    private func hostileSend(_ center: GroupNotificationCenter, _ messages: [(message: [UInt8], descriptor: CInt?)]) throws {
        try hostileSend(center, to: getpid(), transport: .processDefault, messages)
    }

    /// Sends `messages` to the listener of process `pid` over one connection of `transport`.
    private func hostileSend(
        _ center: GroupNotificationCenter, to pid: pid_t, transport: GroupNotificationCenter.Transport,
        _ messages: [(message: [UInt8], descriptor: CInt?)]
    ) throws {
        let status = try #require(center.listenerStatus().first { $0.pid == pid })
        let folder = (status.socketPath as NSString).deletingLastPathComponent
        let directory = try Sys.open(folder, .directory)
        let connected = try UnixSocket.connect(
            transport.socketKind, directory: directory.descriptor, directoryPath: folder,
            name: (status.socketPath as NSString).lastPathComponent)
        for (message, descriptor) in messages {
            // A datagram listener queues ten messages: a full queue is waited out, a minute at most.
            for attempt in 1...60 {
                let failure = message.withUnsafeBytes { bytes -> WormholeError? in
                    do throws(WormholeError) {
                        if let descriptor {
                            try DescriptorPassing.send(connected.descriptor, bytes, passing: Descriptor(rawValue: descriptor))
                        } else {
                            try UnixSocket.send(connected.descriptor, bytes)
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
                guard let failure else { break }
                guard failure.errno == EAGAIN, attempt < 60 else { throw failure }
                var writable = pollfd(fd: connected.rawValue, events: Int16(POLLOUT), revents: 0)
                _ = poll(&writable, 1, 1000)
            }
        }
    }

    /// A sealed (or not) memory file holding `bytes`.
    private func memoryFile(_ bytes: [UInt8], seals: CInt = LinuxCalls.payloadSeals) throws -> OwnedDescriptorBox {
        let file = try LinuxCalls.makeMemoryFile("hostile")
        let fd = file.release().rawValue
        let box = OwnedDescriptorBox(fd: fd)
        try bytes.withRawBytes { (raw) throws(WormholeError) in try Sys.pwriteAll(fd, raw, at: 0) }
        if seals != 0 { try LinuxCalls.addSeals(fd, seals) }
        return box
    }

    /// The message a poster sends for `frame`, declaring `size` bytes.
    private func message(for frame: [UInt8], size: Int? = nil) -> [UInt8] {
        var message = Array(frame.prefix(Frame.headerSize))
        message[3] = SharedFrame.kind
        withUnsafeBytes(of: UInt64(size ?? frame.count).bigEndian) { message += $0 }
        return message
    }

    @Test("a descriptor whose close would wait (a TCP socket lingering on unsent data) does not stall the listener")
    func lingeringDescriptor() async throws {
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("ok"), object: nil, queue: nil, using: recorder.block)
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        center.addObserver(forName: .init("hold"), object: nil, queue: nil) { _ in
            holding.signal()
            _ = release.wait(timeout: .now() + 60)
        }
        // A loopback connection nobody accepts or reads, filled until its sends would block, set to linger five
        // minutes on close: the last close of it waits for its data to leave.
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(server >= 0)
        defer { close(server) }
        var small: CInt = 4096
        setsockopt(server, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<CInt>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try #require(bind(server, raw, length) == 0 && listen(server, 1) == 0)
                try #require(getsockname(server, raw, &length) == 0)
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        setsockopt(client, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<CInt>.size))
        try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try #require(connect(client, raw, length) == 0)
            }
        }
        try #require(fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK) == 0)
        let chunk = [UInt8](repeating: 7, count: 4096)
        while chunk.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 {}
        var linger = Glibc.linger(l_onoff: 1, l_linger: 300)
        try #require(setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size)) == 0)
        try #require(fcntl(client, F_SETFL, fcntl(client, F_GETFL) & ~O_NONBLOCK) == 0)
        // The socket rides on an ordinary frame (dropped for it), and a well-formed frame follows it on the same
        // connection. Both are sent while the receive thread is held in an observer, and the test's own copy is
        // closed before it goes on: the listener's close of the socket is the last one.
        try hostileSend(center, [(Frame(poster: 8, sequence: 1, name: "hold", object: nil, userInfo: nil).encoded(), nil)])
        try #require(holding.wait(timeout: .now() + 60) == .success)
        let stray = Frame(poster: 7, sequence: 1, name: "ok", object: nil, userInfo: nil).encoded()
        let good = Frame(poster: 7, sequence: 2, name: "ok", object: nil, userInfo: nil).encoded()
        try hostileSend(center, [(stray, client), (good, nil)])
        close(client)
        release.signal()
        #expect(try await recorder.wait(for: 1, timeout: 60).count == 1)
        #expect(center.statistics.dropped == 1)
        // Closing the server resets the connection, which ends the lingering close.
    }

    /// How many of this process's descriptors are open on a file whose link in /proc/self/fd reads `target`.
    private func descriptors(to target: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == target }
            .count
    }

    @Test("descriptors passed to a listener that reads one message at a time (as on Apple platforms) are all closed")
    func descriptorsToOneMessageReads() async throws {
        let container = TemporaryContainer()
        let listener = try Peer(
            "wormhole-test-peer", ["listen", "--container", container.path, "--name", "ok", "--count", "3"],
            environment: ["WORMHOLE_TRANSPORT": "datagram", "WORMHOLE_APPLE_PATHS": "1"])
        try await listener.awaitLines(1)
        let center = try GroupNotificationCenter(containerURL: container.url)
        var pipeEnds: [Int32] = [-1, -1]
        try #require(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { close($0) } }
        let stray = Frame(poster: 9, sequence: 1, name: "ok", object: nil, userInfo: nil).encoded()
        // Far more than a listener has descriptors to spare, were they kept; some in messages of no bytes.
        try hostileSend(
            center, to: listener.pid, transport: .datagram,
            Array(repeating: (stray, pipeEnds[0]), count: 150) + Array(repeating: ([], pipeEnds[0]), count: 150))
        let poster = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", "ok", "--count", "2"],
            environment: ["WORMHOLE_TRANSPORT": "datagram"])
        #expect(try await poster.awaitExit() == 0)
        // Both posts arrive after the 300 stray messages, all dropped: the listener read past them. It still runs.
        try await listener.awaitLines(3)
        let pipeName = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(pipeEnds[0])")
        let held = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(listener.pid)/fd")) ?? []).filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(listener.pid)/fd/" + $0)) == pipeName
        }
        let last = try Peer(
            "wormhole-test-peer", ["post", "--container", container.path, "--name", "ok", "--start", "2"],
            environment: ["WORMHOLE_TRANSPORT": "datagram"])
        #expect(try await last.awaitExit() == 0)
        #expect(try await listener.awaitExit(timeout: 30) == 0)
        #expect(listener.jsonLines().compactMap { $0["i"] as? Int } == [0, 1, 2])
        #expect(listener.errorOutput.filter { $0.contains("carried 1 descriptors") }.count >= 1)
        #expect(held.count <= Limits.maximumPendingCloses, "closed as they came, not kept")
    }

    @Test("forged shared frames and stray descriptors are dropped and counted, every descriptor closed; later posts arrive")
    func hostileDescriptors() async throws {
        try #require(SharedFrame.isAvailable)
        let container = TemporaryContainer()
        let center = try GroupNotificationCenter(containerURL: container.url)
        let recorder = Recorder()
        center.addObserver(forName: .init("ok"), object: nil, queue: nil, using: recorder.block)
        let frame = Frame(poster: 7, sequence: 1, name: "ok", object: nil, userInfo: [1, 2, 3]).encoded()
        let other = Frame(poster: 7, sequence: 2, name: "ok", object: nil, userInfo: nil).encoded()
        var pipeEnds: [Int32] = [-1, -1]
        try #require(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { close($0) } }
        do {
            let unsealed = try memoryFile(frame, seals: 0)
            let writable = try memoryFile(frame, seals: LinuxCalls.sealShrink | LinuxCalls.sealGrow)
            let sealed = try memoryFile(frame)
            let mismatched = try memoryFile(other)
            // Frames whose userInfo does not end where the file does: a byte after it, or its last byte missing.
            let trailing = try memoryFile(frame + [0])
            let short = try memoryFile(Array(frame.dropLast()))
            // Sealed at the right size, but sparse: it costs its sender nothing.
            let sparse = try memoryFile([], seals: 0)
            try #require(ftruncate(sparse.fd, off_t(frame.count)) == 0)
            try LinuxCalls.addSeals(sparse.fd, LinuxCalls.payloadSeals)
            let cases: [(message: [UInt8], descriptor: CInt?)] = [
                (message(for: frame), nil),  // a shared frame's message without its file
                (message(for: frame), unsealed.fd),  // a file the poster could still change
                (message(for: frame), writable.fd),  // sealed against resizing, not against writing
                (message(for: frame), pipeEnds[0]),  // not a regular file: a pipe
                (message(for: frame, size: frame.count + 1), sealed.fd),  // declares more than the file holds
                (message(for: frame, size: 1 << 40), sealed.fd),  // declares more than any frame
                (message(for: frame), mismatched.fd),  // holds another frame than its message names
                (message(for: frame, size: frame.count + 1), trailing.fd),  // a byte after the frame's end
                (message(for: frame, size: frame.count - 1), short.fd),  // a frame cut short
                (message(for: frame), sparse.fd),  // sparse
                (Array(message(for: frame).prefix(Frame.headerSize + 3)), sealed.fd),  // a cut message
                (other, sealed.fd),  // an ordinary frame that carries a descriptor
            ]
            // Last, a well-formed shared frame from the same hostile peer, which is taken (once it arrived, the
            // listener has read everything before it), and the same file again, which is not read twice.
            try hostileSend(center, cases + [(message(for: frame), sealed.fd), (message(for: frame), sealed.fd)])
            try await recorder.wait(for: 1)
        }
        let poster = try Peer("wormhole-test-peer", ["post", "--container", container.path, "--name", "ok", "--count", "2"])
        #expect(try await poster.awaitExit() == 0)
        let received = try await recorder.wait(for: 3)
        #expect(received.count == 3)
        #expect(center.statistics.dropped == 13)
        DescriptorPassing.waitForClosing()
        // Every descriptor the listener received is closed again: none of the memory files (the test closed its
        // own), and of the pipe only the test's two ends.
        #expect(descriptors(to: "/memfd:hostile (deleted)") == 0)
        let pipeName = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(pipeEnds[0])")
        #expect(descriptors(to: pipeName) == 2)
    }
    #endif
}
