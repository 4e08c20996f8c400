// The limits an application can read, from the table of every limit (``Limits``).
import WormholeEngine

extension GroupNotificationCenter {
    /// The largest encoded userInfo a notification may carry: 16 MiB. Larger posts are refused whole.
    public static let maximumPayloadSize = Limits.maximumPayloadSize
    /// The most bytes one listener's spool may hold by default: 128 MiB. A post that would pass it is not
    /// spooled for that listener, and the reporting post says so. ``Configuration`` changes it.
    public static let maximumSpoolSize = Limits.maximumSpoolSize
    /// The most bytes all the spools of one container may hold together by default: 512 MiB.
    /// ``Configuration`` changes it.
    public static let maximumContainerSpoolSize = Limits.maximumContainerSpoolSize
    /// The most listening processes one container may hold: 512.
    public static let maximumListeners = Limits.maximumListeners
    /// How long a durable client identity may go unseen before the next process that registers in the container
    /// removes it with its spool: 30 days, in seconds.
    public static let maximumDurableAge = Limits.maximumDurableAge
    /// The longest notification name or object, in UTF-8 bytes: 4096.
    public static let maximumNameLength = Limits.maximumNameLength
    /// The deepest nesting of arrays and dictionaries a userInfo or a group value may hold: 128 levels, the
    /// outermost counted. Deeper ones are refused whole, as unreadable by the receiver.
    public static let maximumNestingDepth = Limits.archiveMaximumDepth
}
