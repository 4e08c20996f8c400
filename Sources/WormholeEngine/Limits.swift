/// The documented limits and the tunables, in one place: every layer reads its numbers here (the API's public
/// ones included), so this table uses no layer's types. What is left where it is used: numbers that belong to one
/// build or platform (the fuzzing build's shared-data minimum; a Darwin datagram socket's receive buffer, in
/// Platform/Darwin), and the retry counts of loops that race other processes. Each system's default open-file
/// limit, which ``maximumLinks`` is worked out from, is a limit of this table that Platform/Darwin and
/// Platform/Linux give (`defaultOpenFileLimit`).
package enum Limits {
    /// The largest encoded userInfo a notification may carry. Larger posts are refused whole.
    package static let maximumPayloadSize = 16 << 20
    /// The longest notification name, object or client identifier, in UTF-8 bytes.
    package static let maximumNameLength = 4096
    /// The longest a request may wait for its reply, and the most time remaining a responder believes a request
    /// has (a request that claims more is cut to this).
    package static let maximumRequestTimeout: Duration = .seconds(24 * 3600)
    /// The longest request id a responder accepts, in UTF-8 bytes (a request's own are 32).
    package static let maximumRequestIDLength = 64
    /// The most bytes one listener's spool may hold, unless a center's configuration says otherwise.
    package static let maximumSpoolSize = 128 << 20
    /// The most bytes all the spools of one container may hold together, unless a center's configuration says
    /// otherwise.
    package static let maximumContainerSpoolSize = 512 << 20
    /// The most listening processes one container may hold.
    package static let maximumListeners = 512
    /// How long a durable client identity may go unseen before the next process that registers in the container
    /// removes it with its spool, in seconds.
    package static let maximumDurableAge: Double = 30 * 24 * 3600
    /// Frames up to this size go through the socket, because a seqpacket message must fit the socket buffer
    /// whole; larger ones go as shared memory files where the platform has them (``SharedFrame``), else through
    /// the spool. One this size fits when the buffer is empty; when it is not, the send fails with EAGAIN and the
    /// frame is spooled.
    package static let maximumDirectFrameSize = 128 * 1024
    /// How often an idle listener checks its spool, its socket file and its registry entry.
    package static let housekeepingInterval: Interval = .seconds(1)
    /// How long after reading its sockets without looking at its spool's bell afterwards a listener looks at it
    /// anyway: the longest a spooled frame waits when its poster found the socket full and could not nudge.
    package static let bellLook: Interval = .milliseconds(10)
    /// The most links a posting process keeps open per container; past it, the link used least recently is
    /// closed. A link holds up to five descriptors while it spools (its socket, the listener's spool folder and
    /// bell, its segment and its lease), so an eighth of the default soft limit of open files: 32 on Apple
    /// platforms, whose default is 256 (the links take at most 160), and 64 on Linux, whose default is 1,024.
    package static let maximumLinks = min(64, defaultOpenFileLimit / 8)
    /// What a listener may have read and not yet delivered (waiting for observers' queues, actors and async
    /// sequences, each notification counted by its frame's bytes) before it stops reading its sockets and its
    /// spool (``DeliveryBacklog``): this many notifications, or this many bytes.
    package static let deliveryBacklogNotifications = 4096
    package static let deliveryBacklogBytes = 16 << 20
    /// How long a notification waits for the main actor (or the main operation queue) before Wormhole says, once
    /// per process, that nothing runs the main queue (``MainQueueWatch``).
    package static let mainQueueWait: Interval = .seconds(3)
    /// How long a durable identity's new listener waits for the receive thread of the one this process stopped
    /// before it (which may be running an observer's block) to end; then the identity is in use.
    package static let endingListenerWait: Interval = .seconds(10)
    /// How long stopping a listener waits for its receive thread to end (unless it runs observers' code), and
    /// how often it looks meanwhile.
    package static let stopWait: Interval = .seconds(5)
    package static let stopPoll: Interval = .milliseconds(5)
    /// A listener whose socket keeps failing binds it anew at most this often.
    package static let forcedRebindInterval: Interval = .seconds(1)
    /// A failure that repeats (a wait for the sockets) is said at most this often; every one is counted.
    package static let repeatedWarningInterval: Interval = .seconds(1)
    /// How long a sequenced-packet listener out of descriptors leaves its listening socket alone.
    package static let acceptPause: Interval = .milliseconds(100)
    /// How often a listener out of descriptors says so while it lasts.
    package static let descriptorWarningInterval: Interval = .seconds(10)
    /// The shortest time between two reloads of an app's widgets by a `WidgetReloader` (WormholeUI), unless the
    /// app gives its own: short enough that the widgets show a change made in the foreground before the user
    /// leaves the app (reloads made in the foreground do not count against a widget's daily budget), long enough
    /// to fold a burst of changes (a sync, typing) into two reloads.
    package static let widgetReloadInterval: Duration = .seconds(2)

    // MARK: A relay to another device (WormholeRelay)

    /// The most notifications a relay keeps for the other device before it acknowledges them; past it, a
    /// notification is dropped, logged and counted. 50,000 is weeks of an app's traffic with the Watch away.
    package static let relayOutboxCapacity = 50_000
    /// The largest outbox item read back: a notification's largest userInfo and names, with room.
    package static let relayOutboxItemSize = 2 << 20
    /// The most notifications from the other device held ahead of one still on its way; past it they are
    /// dropped, and the other side sends them again.
    package static let relayEarlyItems = 10_000
    /// The most bytes of userInfo those may hold together.
    package static let relayEarlyBytes = 16 << 20
    /// The highest outbox number a relay accepts from its files or the other side: far past any real run's, far
    /// from overflowing.
    package static let relayHighestLink: UInt64 = 1 << 60
    /// How far ahead of this device's clock a stamp from the other device may be; one further is taken as
    /// forged or broken and not applied, so that it cannot win every later write.
    package static let relayStampLead: Duration = .seconds(24 * 3600)
    /// The most posters a relay remembers on each side, to drop what comes twice; the least recently seen
    /// are forgotten first (a copy comes soon after its original).
    package static let relayRememberedPosters = 4096
    /// The largest relay state file read back: the remembered posters and the stamps, with room.
    package static let relayStateFileSize = 8 << 20
    /// The longest log of posts read back; a longer one is not a relay's and is ignored.
    package static let relayPostedLogSize = 24 << 20
    /// The largest payload a relay decodes from the other side: every link's own limit is smaller.
    package static let relayPayloadSize = 16 << 20
    /// How often a relay looks for retained notifications and group values changed without an announcement, and
    /// for what waits to be handed to its link.
    package static let relayTick: Duration = .seconds(1)
    /// How far behind the last frame of a relay's poster a frame is still taken for a copy, and dropped: a relay
    /// posts again only what it posted last before it was killed (a batch at most).
    package static let relayCopyWindow: UInt64 = 4096

    // MARK: A bridge to other hosts (WormholeBridge)

    /// What a NATS server's messages to the bridge may carry beyond its own `max_payload`: its API's answers
    /// (JSON) are not bound by it.
    package static let natsPayloadSlack = 64 << 10
    /// The longest control line (`MSG …`, `INFO {…}`) read from a NATS server.
    package static let natsControlLine = 64 << 10
    /// The most messages a pull's inbox holds not yet taken. The bridge asks for one at a time, so a server that
    /// sends more is flooding it: the connection is closed.
    package static let natsMailboxDepth = 256
    /// The longest subject the bridge publishes to: a server reads control lines of 4,096 bytes by default
    /// (`max_control_line`) and closes the connection of a client that writes a longer one. A name whose subject
    /// is longer (over about 1,000 bytes of escaped characters) cannot cross.
    package static let natsLongestSubject = 3072
    /// How long the bridge waits for a NATS server to connect, sign in, or answer a request.
    package static let bridgeRequestTimeout: Duration = .seconds(5)
    /// How long a pull for the next message waits at the server before it comes back empty.
    package static let bridgePullExpiry: Duration = .seconds(2)
    /// How long a message handed to the bridge may go unacknowledged before the server hands it over again: one
    /// handed to a connection that ended (a bridge stopped or killed while a pull waited) holds up the host's
    /// consumer that long. Posting one takes far less; one handed over again meanwhile is dropped as a copy.
    package static let bridgeAckWait: Duration = .seconds(3)
    /// The first and the longest wait before the bridge connects again after a failure; each failure doubles it.
    package static let bridgeFirstBackoff: Duration = .milliseconds(100)
    package static let bridgeLongestBackoff: Duration = .seconds(5)
    /// How long a connection must have served before its end starts the waits over from the first: a server that
    /// fails each connection soon after taking it is tried less and less often, like one that refuses it.
    package static let bridgeSteadyConnection: Duration = .seconds(10)
    /// The most servers of a cluster the bridge tries, of those the last server named (`connect_urls`): a server
    /// that names a thousand would keep the bridge from coming back to the one it was given.
    package static let bridgeLargestCluster = 16
    /// The most messages of a consumer's gap the bridge reads from the stream; past it (a host away far longer
    /// than the stream keeps messages), the rest are left, and that is said.
    package static let bridgeLongestGap = 10_000
    /// How many of this host's requests a bridge keeps while it is not connected, to publish once it is (each
    /// while its requester still waits), and their bytes at most; one more is dropped, and its requester times
    /// out.
    package static let bridgeWaitingRequests = 1_024
    package static let bridgeWaitingRequestBytes = 16 << 20
    /// How many requests from this host, or from others, a bridge follows at once (each until its reply or its
    /// time is up); one more is dropped, and its requester times out.
    package static let bridgeOpenRequests = 65_536
    /// For how long after it connects a bridge publishes again, each second, a request that waited for the
    /// connection and that no host answers: the other hosts' bridges may connect later (a server that restarted
    /// takes them back one by one).
    package static let bridgeReconnectGrace: Duration = .seconds(10)
    /// How often the bridge saves its state while it posts what came: the posted log covers what came between.
    package static let bridgeStateSaveInterval: Duration = .seconds(1)

    // MARK: Reading archives

    /// The deepest nesting of containers accepted.
    package static let archiveMaximumDepth = 128
    /// The most elements an archive may expand into, counting a shared object once per use.
    package static let archiveMaximumElements = 4_000_000
    /// The most bytes any archive may expand into: what a consumer walking every reference would see, with
    /// 8 bytes per element besides the bytes of its strings and data.
    package static let archiveMaximumExpandedBytes = 64 << 20
    /// How much reading an archive may cost, per byte of it: reading each property-list object once costs
    /// about one unit per byte; an archive that makes its readers parse shared objects over and over is refused
    /// past this many.
    package static let archiveWorkFactor = 16
    /// How many keys of one dictionary, or elements of one set, may share a hash.
    package static let maximumHashSharing = 16
    /// A decoded dictionary of at most this many keys gets room for ``roomyDictionaryFactor`` times as many, and
    /// its leading keys that are distinct strings of ASCII are placed by their hash alone. Any other key that lands
    /// on a taken bucket is compared there through `AnyHashable`'s `==`, about 2,300 instructions here: three keys
    /// meet a taken bucket 0.2 times on average with room for 12, 0.94 times with room for 3. Larger dictionaries
    /// get room for their keys only, so that what a reader allocates stays in proportion to the archive.
    package static let roomyDictionaryMaximumKeys = 8
    package static let roomyDictionaryFactor = 4

    // MARK: The registry

    /// How long a reader trusts the snapshot it last checked against the mark without reading the mark again;
    /// the time ``Registry/settle()`` waits after a change. About what adding an observer costs anyway (its entry
    /// written and renamed), so that a poster posting once a millisecond reads the mark once in several posts.
    package static let registryTrust: Interval = .milliseconds(1)
    /// How long a reader trusts an unchanged mark before it looks at the folder anyway.
    package static let registryRecheck: Interval = .milliseconds(100)
    /// How long a reader trusts that the mark it reads is still the file at its name. A mark
    /// replaced from outside (which writers then replace again) stays the same in a reader's old descriptor: it
    /// is found out within this time, so that a registration is not missed for longer.
    package static let registryMarkRecheck: Interval = .milliseconds(1)
    /// How long after its last change an entry file is trusted to be the one read before.
    package static let registryEntrySettled: Interval = .milliseconds(100)
    /// The largest entry file read; a listener whose subscriptions would not fit registers for every name.
    package static let maximumRegistryEntrySize = 1 << 20

    // MARK: Spools

    /// The largest segment a listener reads; past it a segment is damaged (a sparse or runaway file).
    package static let maximumSegmentSize = 1 << 30
    /// How much of a segment a listener reads at once: a run of small records costs one read, and a record larger
    /// than this is read on its own.
    package static let segmentReadWindow = 1 << 20
    /// How old an unnamed segment must be before a listener removes it: its poster died, or was
    /// stopped, between making it and naming it. A poster that comes back to find it gone writes its record into
    /// a new one, so this only bounds how long a dead poster's file takes room.
    package static let unnamedSegmentLifetime: Interval = .seconds(60)
    /// A userInfo larger than this is written on its own rather than copied behind its record's header.
    package static let separateWriteSize = 64 << 10
    /// How long a segment found under its name is taken to still be there.
    package static let segmentRecheck: Interval = .microseconds(20)
    /// How long after renewing a poster renews again before its next write: well within ``leaseLifetime``, so
    /// that a poster that writes keeps its lease fresh.
    package static let leaseRenewal: Interval = .seconds(1)
    /// How old (by its modification time) another poster's lease may be and still count.
    package static let leaseLifetime: Interval = .seconds(5)
    /// How far in the future a lease's time may be (clocks differ by a little) and still count.
    package static let leaseFutureTolerance: Interval = .seconds(1)
    /// The most a renewal asks for beyond the record at hand, as a fraction of the cap: a flood of small records
    /// renews about once per this much.
    package static let leaseAskDivisor = 32
    /// How much more than a poster has left to write its lease may claim before it is set down, after a record
    /// is written (a lease with nothing left is set down at once): a flood of small records sets it once per this
    /// much, and no lease claims more than this beyond what its poster is about to write.
    package static let leaseShrinkStep = 64 << 10
    /// How many damaged leases one posting process remembers having counted and logged, so that each is said once.
    package static let rememberedDamagedLeases = 1024
    /// How long a posting process that remembers ``rememberedDamagedLeases`` of them goes on remembering them
    /// before it forgets them all: more planted files than that are said again at most this often, not once
    /// per renewal (``SpoolLeaseTests``).
    package static let damagedLeasesForgottenAfter: Interval = .seconds(60)
    package static let spoolBudgetRemeasure: Interval = .milliseconds(100)
    /// How soon a total that would refuse a post is measured again.
    package static let spoolBudgetMinimumRemeasure: Interval = .milliseconds(1)
    /// Handed over at once when a drain has gathered this many frames or bytes.
    package static let spoolChunkFrames = 512
    package static let spoolChunkBytes = 8 << 20
    /// How long a durable listener whose spool holds something waits after an observer is added before it hands
    /// the spool over, reading nothing meanwhile: each observer added in the wait starts it again, so that the
    /// observers start-up code adds one after another all receive the whole backlog. Posts made meanwhile wait in
    /// the socket, then in the spool, and follow the backlog in order.
    package static let handOverSettle: Interval = .milliseconds(200)
    /// The longest that wait lasts from the first observer it waits for, however many follow.
    package static let handOverSettleLimit: Interval = .seconds(5)
    /// How many sequence numbers per poster are remembered to drop a copy written again.
    package static let rememberedSequencesPerPoster = 512
    package static let rememberedPosters = 4096

    // MARK: Group values

    /// Emptied versions kept behind the newest, so that their numbers cannot be claimed again.
    package static let valueKeptNames: UInt64 = 256
    /// Versions kept behind the newest.
    package static let valueKeptVersions: UInt64 = 8

    // MARK: Files in the container

    /// The most names one listing of a folder in the container gives (a spool, the listeners, a value's versions):
    /// past it the rest waits for a later look, so a folder someone filled cannot make one pass run without end.
    static let maximumListedNames = 100_000
    /// The most names of `spool/` one housekeeping pass looks at for orphaned folders (each may cost a `stat(2)`):
    /// it runs once a second, so a `spool/` someone filled costs each pass no more than this.
    package static let orphanedSpoolsPerPass = 10_000
    /// The most names a clean-up asked for by a tool lists at once (`wormhole retained --clear`): it runs on
    /// demand, not each second.
    package static let maximumNamesCleared = 1 << 20
    /// How old a writer's temporary file is before housekeeping takes its writer for dead and removes it.
    static let staleTemporaryAge: Interval = .seconds(600)
    /// How old a spool folder, a claim's socket or a socket file of no registered listener is before
    /// housekeeping removes it (a listener killed between making it and registering).
    package static let orphanAge: Interval = .seconds(60)

    // MARK: Sockets and reading them

    /// The send buffer of a poster's sequenced-packet connection, which is what bounds how many frames queue
    /// for a listener that has not read them yet (Linux charges a connected packet to its sender): 1 MiB asked,
    /// which Linux doubles for its bookkeeping, so about 2,700 small frames where the default 208 KiB holds 278.
    /// A poster faster than its listener then spools far less often; memory is used only while frames wait.
    static let sequencedPacketSendBuffer: CInt = 1 << 20
    /// Room a message needs in a send buffer beyond its bytes (the kernel's bookkeeping, an address).
    static let sendBufferOverhead = 4096
    /// How many messages one receive takes at most.
    package static let readBatchSize = 16
    /// How many connections a sequenced-packet listener's socket holds before they are accepted (`listen(2)`'s
    /// backlog); past it a poster's connect fails at once, and it spools.
    static let listenBacklog: CInt = 128
    /// The stack of a listener's receive thread, on which the blocks of observers without a queue also run.
    package static let receiveThreadStack = 4 << 20
    /// The most messages one socket gives in a round of the receive thread (its wait found the socket ready):
    /// what remains wakes the next wait, and the other sockets get their turn.
    package static let readsPerRound = 512
    /// The most messages one socket gives when the receive thread reads everything waiting (before handing over
    /// what it took from the spool, or as a listener ends), and when it reads a sealed socket to its end.
    package static let readsWhenEmptying = 100_000
    package static let readsWhenClosing = 1_000_000
    /// How many times a durable listener that ends reads its sockets once more, each read stopping at a round's
    /// byte budget (``readRoundBudget``), before it hands over what it has.
    package static let lastReads = 16
    /// The most bytes of frames one round of reads takes (an inbox begins a round each time it reads): past it,
    /// what waits stays in the socket for the next round. A shared frame's small message can stand for 16 MiB,
    /// so this bounds what posters can make the listener hold at once.
    package static let readRoundBudget = 64 << 20
    /// One read in this many, while the socket holds one message at a time, asks for a batch.
    package static let readPaceProbeInterval = 8
    /// The most connections a listener keeps open. Past it, the connection read least recently is closed
    /// gracefully: no more sends are accepted on it (its poster connects again), and what it holds is read first.
    package static let maximumConnections = 256
    /// The most sockets kept from before a rebind that could not be sealed, still read because posters
    /// connected to them send there.
    package static let maximumRetiredSockets = 4
    /// How many bytes of shared frames one poster may have sent to one listener that it has not read yet
    /// (besides one frame, whatever its size): what a stopped listener's descriptors hold of memory.
    package static let maximumSharedUnread = 16 << 20
    /// How many of those files a listener remembers.
    package static let recentSharedFiles = 64
    /// The most bytes of frame files (``FrameFile``) one process keeps for its connections; a post to more
    /// listeners than they cover sends its large frame to the others as a shared frame.
    package static let maximumFrameFileBytes = 64 << 20
    /// The most listeners a post may go to for its large frame to go through their frame files; a post to more
    /// shares one sealed file among them all.
    package static let frameFileListeners = 2
    /// How long a frame file waits for its listener's mark before its poster lets it go and makes another.
    package static let frameFileWait: Interval = .seconds(1)
    /// The most received descriptors left open waiting for the closer; past it they are closed where they are,
    /// so that a sender cannot make this process run out of descriptors.
    static let maximumPendingCloses = 64
}

/// A time limit, held as whole nanoseconds, and the units it is counted in where it is used (a `Duration`'s
/// conversion divides 128-bit numbers, which posts and receive rounds should not do each time). The limits made
/// with ``seconds(_:)`` and its kin are constants the compiler lays out in the binary: reading one costs no
/// check that it was made.
package struct Interval: Sendable {
    /// In whole nanoseconds, for ages that may be negative.
    package let signedNanoseconds: Int64

    /// `duration` in whole nanoseconds, within what an `Int64` holds.
    package init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        signedNanoseconds = overflow || overflowAgain ? (seconds < 0 ? .min : .max) : sum
    }

    @inline(__always) private init(nanoseconds: Int64) {
        signedNanoseconds = nanoseconds
    }

    package var duration: Duration { .nanoseconds(signedNanoseconds) }
    /// In whole nanoseconds, for uptime arithmetic.
    package var nanoseconds: UInt64 { UInt64(max(0, signedNanoseconds)) }
    /// In whole milliseconds, for `poll(2)`.
    package var milliseconds: Int32 { Int32(clamping: signedNanoseconds / 1_000_000) }

    @inline(__always) static func seconds(_ count: Int) -> Interval { Interval(nanoseconds: Int64(count) &* 1_000_000_000) }
    @inline(__always) static func milliseconds(_ count: Int) -> Interval { Interval(nanoseconds: Int64(count) &* 1_000_000) }
    @inline(__always) static func microseconds(_ count: Int) -> Interval { Interval(nanoseconds: Int64(count) &* 1_000) }
}
