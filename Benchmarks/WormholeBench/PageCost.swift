// What fresh memory costs on this machine: the floor under a large payload that every post hands over in pages
// of its own, as a sealed memory file does (the poster's file cannot be written again, so each post's pages are
// allocated for it and freed after it), against the raw socket, which reuses its buffers.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum PageCost {
    static let size = 1 << 20
    /// Where the warm copy goes: kept where the optimiser cannot prove it unread, so that the copy stays.
    nonisolated(unsafe) static var copied: UnsafeMutableRawPointer?
    nonisolated(unsafe) static var checksum: UInt8 = 0

    /// Microseconds per MiB, fastest of 5 runs of 50: a memory file made, filled with `pwrite(2)` and closed (its
    /// pages allocated and freed); fresh anonymous pages mapped, written and unmapped; a copy into memory already
    /// written. Nil where there is no `memfd_create`.
    static func measure() -> (memoryFile: Double?, freshPages: Double, warmCopy: Double) {
        let source = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        let warm = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer {
            source.deallocate()
            warm.deallocate()
        }
        memset(source, 0x57, size)
        memset(warm, 0, size)
        copied = warm
        defer { copied = nil }
        var memoryFile: Double?
        #if canImport(Glibc)
        typealias MakeMemoryFile = @convention(c) (UnsafePointer<CChar>, CUnsignedInt) -> CInt
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "memfd_create") {
            let make = unsafeBitCast(symbol, to: MakeMemoryFile.self)
            memoryFile = fastest {
                let fd = make("wormhole-bench", 0x1)
                _ = pwrite(fd, source, size, 0)
                close(fd)
            }
        }
        #endif
        let freshPages = fastest {
            guard let pages = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                pages != MAP_FAILED
            else { return }
            memcpy(pages, source, size)
            munmap(pages, size)
        }
        let warmCopy = fastest {
            guard let copied else { return }
            memcpy(copied, source, size)
            checksum &+= copied.load(fromByteOffset: size - 1, as: UInt8.self)
        }
        return (memoryFile, freshPages, warmCopy)
    }

    private static func fastest(_ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<5 {
            let start = monotonicNanoseconds()
            for _ in 0..<50 { body() }
            best = min(best, Double(monotonicNanoseconds() - start) / 50 / 1000)
        }
        return best
    }
}
