/// The documented limits, in one place: every layer reads its numbers here (the API's public ones included).
enum Limits {
    /// The largest encoded userInfo a notification may carry. Larger posts are refused whole.
    static let maximumPayloadSize = 16 << 20
    /// The longest notification name, object or client identifier, in UTF-8 bytes.
    static let maximumNameLength = 4096
    /// The most listening processes one container may hold.
    static let maximumListeners = 512
    /// How long a durable client identity may go unseen before the next process that registers in the container
    /// removes it with its spool, in seconds.
    static let maximumDurableAge: Double = 30 * 24 * 3600
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
    /// its sockets and its spool (``DeliveryBacklog``): this many notifications, or this many bytes.
    static let deliveryBacklogNotifications = 4096
    static let deliveryBacklogBytes = 16 << 20
    /// How long a durable identity's new listener waits for the receive thread of the one this process stopped
    /// before it (which may be running an observer's block) to end, in seconds; then the identity is in use.
    static let endingListenerWait = 10
}
