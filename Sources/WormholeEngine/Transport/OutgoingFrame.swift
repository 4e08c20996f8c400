/// A frame on its way to the listeners of one post: encoded whole once, for those that take it through their
/// socket or spool, and, when it is too large for a socket, written into the frame file of each running listener
/// of a post to one or two (``FrameFile``), or else once into a sealed memory file that they all share
/// (``SharedFrame``), without ever being encoded whole for them.
///
/// Lives for one post, on the posting thread: the memory file's descriptor closes when the post is done.

final class OutgoingFrame {
    let frame: Frame
    /// The encoded frame's size.
    let count: Int
    /// The encoded frame, once made: memory of its own from `malloc(3)` (``Sys/allocate(_:)``), which costs less
    /// to make than an array (whose storage type the runtime looks up for each one on Linux) or Swift's raw
    /// allocation.
    /// Used on the posting thread alone, as every stored property here: no run-time exclusivity checks.
    @exclusivity(unchecked) private var whole: UnsafeMutableRawBufferPointer?
    @exclusivity(unchecked) private var head: [UInt8]?
    @exclusivity(unchecked) private var sharedFile: OwnedDescriptor?
    /// Why the memory file could not be made, so that it is not tried again for every listener of the post.
    @exclusivity(unchecked) private var sharedFailure: WormholeError?
    /// Whether the frame may go through the listeners' frame files (``FrameFile``): a copy for each costs less
    /// than a sealed file for a post to one or two, but more for a post to many, whose copies outgrow the caches
    /// and are made besides the sealed file that listeners whose files are busy share.
    @exclusivity(unchecked) private(set) var usesFrameFiles = false

    init(_ frame: consuming Frame) {
        // Measured before the frame moves in: a use after the move would copy it.
        count = frame.encodedSize
        self.frame = frame
    }

    deinit {
        if let whole { Sys.deallocate(whole) }
    }

    /// Runs `body` with the encoded frame, made on first use.
    func withBytes<Result, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> Result) throws(Failure) -> Result {
        if let whole { return try body(UnsafeRawBufferPointer(whole)) }
        guard let made = Sys.allocate(count) else {
            // Out of memory: an array this once, which stops the process if it cannot be made either, as any
            // allocation of Swift's does.
            return try frame.encoded().withUnsafeBytes { raw in Swift.Result { () throws(Failure) -> Result in try body(raw) } }.get()
        }
        let written = UnsafeMutableRawBufferPointer(rebasing: made[..<frame.encode(into: made)])
        whole = written
        return try body(UnsafeRawBufferPointer(written))
    }

    /// A copy of the encoded frame, for storing it.
    var bytes: [UInt8] {
        withBytes { [UInt8]($0) }
    }

    /// The encoded frame in two parts, its head and its userInfo, for writing it without building it whole
    /// (the spool takes a large frame this way); the whole frame alone when it was built already.
    func withParts(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(WormholeError) -> Void)
        throws(WormholeError)
    {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        if let whole {
            try body(UnsafeRawBufferPointer(whole), empty)
            return
        }
        let head = self.head ?? frame.encodedHead()
        self.head = head
        try head.withRawBytes { (head) throws(WormholeError) in
            guard let userInfo = frame.userInfo else { return try body(head, empty) }
            try userInfo.withBytes { (archive) throws(WormholeError) in try body(head, archive) }
        }
    }

    /// Lets the frame go through frame files when the post goes to at most ``Limits/frameFileListeners``
    /// listeners: `count` of them.
    func goes(toListeners count: Int) {
        usesFrameFiles = count <= Limits.frameFileListeners
    }

    /// The sealed memory file that holds the frame, made on first use (its head, then the userInfo as it is).
    /// - Throws: when the file cannot be made (out of memory or descriptors), a ``PeerState/failed``.
    func sharedDescriptor() throws(WormholeError) -> Descriptor {
        if let fd = sharedFile?.descriptor { return fd }
        if let sharedFailure { throw sharedFailure }
        let file: OwnedDescriptor
        do throws(WormholeError) {
            file = try SharedFrame.makeFile(head: frame.encodedHead(), userInfo: frame.userInfo)
        } catch {
            sharedFailure = error
            throw error
        }
        let fd = file.descriptor
        sharedFile = consume file
        return fd
    }
}
