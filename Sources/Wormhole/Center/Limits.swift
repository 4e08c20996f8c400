/// The documented limits, in one place.
enum Limits {
    /// Frames up to this size go through the socket, because a seqpacket message must fit the socket buffer
    /// whole; larger ones go as shared memory files where the platform has them (``SharedFrame``), else through
    /// the spool. One this size fits when the buffer is empty; when it is not, the send fails with EAGAIN and the
    /// frame is spooled.
    static let maximumDirectFrameSize = 128 * 1024
    /// How often an idle listener checks its spool, its socket file and its registry entry, in milliseconds.
    static let housekeepingInterval: Int32 = 1000
    /// How long after reading its sockets without looking at its spool's bell afterwards a listener looks at it
    /// anyway, in milliseconds: the longest a spooled frame waits when its poster found the socket full and
    /// could not nudge.
    static let bellLookMilliseconds: Int32 = 10
    /// The most links a posting process keeps open per container; past it, the link used least recently is
    /// closed. A link holds up to five descriptors while it spools (its socket, the listener's spool folder and
    /// bell, its segment and its lease): on Apple platforms, whose default soft limit is 256 open files, 32 links
    /// take at most 160 of them; Linux's default is 1,024.
    #if canImport(Darwin)
    static let maximumLinks = 32
    #else
    static let maximumLinks = 64
    #endif
    /// What a listener may have read and not yet delivered (waiting on observers' queues) before it stops reading
    /// its sockets and its spool: ``DeliveryBacklog``.
    static let deliveryBacklog = DeliveryBacklog.Bound(notifications: 4096, bytes: 16 << 20)
    /// How long a durable identity's new listener waits for the receive thread of the one this process stopped
    /// before it (which may be running an observer's block) to end, in seconds; then the identity is in use.
    static let endingListenerWait = 10
}

extension GroupNotificationCenter {
    /// The largest encoded userInfo a notification may carry: 16 MiB. Larger posts are refused whole.
    public static let maximumPayloadSize = 16 << 20
    /// The most bytes one listener's spool may hold by default: 128 MiB. A post that would pass it is not
    /// spooled for that listener, and the reporting post says so. ``Configuration`` changes it.
    public static let maximumSpoolSize = 128 << 20
    /// The most bytes all the spools of one container may hold together by default: 512 MiB.
    /// ``Configuration`` changes it.
    public static let maximumContainerSpoolSize = 512 << 20
    /// The most listening processes one container may hold: 512.
    public static let maximumListeners = 512
    /// How long a durable client identity may go unseen before the next process that registers in the container
    /// removes it with its spool: 30 days, in seconds.
    public static let maximumDurableAge: Double = 30 * 24 * 3600
    /// The longest notification name or object, in UTF-8 bytes: 4096.
    public static let maximumNameLength = Frame.maximumNameLength
}
