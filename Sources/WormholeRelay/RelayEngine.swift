import Dispatch
import Foundation
import Synchronization
import Wormhole

/// A relay's work, one step at a time on its queue: what this group posts goes into the outbox and over the
/// link; what the link brings is posted here in order, once; retained notifications and group values are kept
/// the same on both sides. Safe because every mutable field is used on `queue` only.
final class RelayEngine: @unchecked Sendable {
    let routes: [RelayRoute]
    private let link: any RelayLink
    private let center: GroupNotificationCenter
    private let queue = DispatchQueue(label: "Wormhole.Relay")
    /// Which relay of this process it is (``RelayClaims``).
    private let key: RelayClaims.Key
    private let generation: UInt64
    private let stateFile: StateFile
    private var postedLog: PostedLog
    private var state: RelayState
    private var outbox: Outbox
    /// This run, drawn at start: a context from it differs from the last run's.
    private let session = UInt64.random(in: 1...UInt64.max)
    /// The outbox items handed to the link in this run (or still held by the link from an earlier one): every
    /// one up to `handedThrough`, and those in `handed` after it.
    private var handedThrough: UInt64 = 0
    private var handed: Set<UInt64> = []
    /// Items from the other device that came ahead of one still on its way, by link sequence.
    private var early: [UInt64: RelayItem] = [:]
    private var earlyBytes = 0
    /// The run of the other side's relay that sent the last payload.
    private var peerSession: UInt64 = 0
    /// The replies this side carries back, by reply name: an observer of each, on an ephemeral center, until the
    /// request's time is up (on this device's monotonic clock).
    private var replyRoutes: [String: (token: any NSObjectProtocol, until: Int64)] = [:]
    private var replyCenter: GroupNotificationCenter?
    private var contextDirty = true
    private var scanPending = false
    private var closed = false
    private let published = Mutex(RelayStatus())
    private let watchers = Mutex<[UInt64: AsyncStream<RelayStatus>.Continuation]>([:])

    private static let maximumEarly = Limits.relayEarlyItems

    /// The engine of the relay folder `folder` (`relay/<client identifier>/` in the container, open by
    /// descriptor), as the relay `key` of this process, the `generation`th there: made while ``RelayClaims`` holds
    /// the key, so that it alone writes the folder.
    init(
        folder: ContainerFolder, key: RelayClaims.Key, generation: UInt64, routes: [RelayRoute], link: any RelayLink,
        center: GroupNotificationCenter
    ) throws {
        self.routes = routes
        self.link = link
        self.center = center
        self.key = key
        self.generation = generation
        // Left by a run killed in the middle of a write: nobody else writes here.
        folder.removeTemporaries()
        stateFile = StateFile(folder: folder, name: "state", limit: RelayState.maximumFileSize)
        let loaded = RelayState.load(from: stateFile, log: Self.log)
        var state = loaded.state
        postedLog = PostedLog(folder: folder)
        // What was posted after the state was last saved.
        for record in postedLog.records(log: Self.log) {
            state.applied = max(state.applied, record.link)
            _ = state.posted.advance(poster: record.poster, sequence: record.sequence)
        }
        outbox = try Outbox(folder: try folder.folder("outbox", create: true), log: Self.log)
        // A new device id: the other side numbers what comes from it from 1 again, and would hold items numbered
        // past that as early for ever.
        if loaded.isNew { try outbox.renumber() }
        // An item written before its state was: numbering and posters go on from the items.
        state.nextLink = max(state.nextLink, outbox.highest + 1)
        for item in outbox.ordered where item.skipped != true {
            _ = state.sent.advance(poster: item.poster, sequence: item.sequence)
        }
        self.state = state
        try state.save(to: stateFile)
        postedLog.clear()
        let waiting = outbox.count
        let damaged = outbox.damaged
        published.withLock {
            $0.waiting = waiting
            $0.dropped = damaged
        }
    }

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("[Wormhole relay] \(message)\n".utf8))
    }

    // MARK: Starting and stopping

    func activate() {
        link.activate { [weak self] event in
            guard let self else { return }
            self.queue.async { self.handle(event) }
        }
        queue.async { self.scan() }
    }

    func close() {
        queue.sync {
            closed = true
            // The ways back of the requests it carried close with it: a reply that comes later is not carried.
            for route in replyRoutes.values { replyCenter?.removeObserver(route.token) }
            replyRoutes = [:]
        }
        watchers.withLock { watchers in
            for continuation in watchers.values { continuation.finish() }
            watchers = [:]
        }
    }

    func tick() {
        queue.async {
            self.closeExpiredReplyRoutes()
            self.scan()
            self.pump()
        }
    }

    func scanSoon() {
        queue.async {
            guard !self.scanPending else { return }
            self.scanPending = true
            self.queue.async {
                self.scanPending = false
                self.scan()
            }
        }
    }

    // MARK: Taking what this group posts

    /// A notification this group posted, on the center's receive thread: written into the outbox before this
    /// returns, so that the durable hand-over counts it taken only once it is kept.
    func taken(_ note: RelayedNotification) {
        guard !note.isRelayed else { return }
        let isReply = GroupNotificationCenter.isReplyName(note.name)
        guard isReply || routes.sends(notification: note.name) else { return }
        let kept = queue.sync { () -> Bool in
            guard !closed else { return false }
            keep(note, isReply: isReply)
            return true
        }
        // Once closed: a block that began before its observer was removed may end after, and what the center
        // handed over here is gone from its spool. It is kept all the same, by this engine while no other relay
        // of this process ran on its folder since (the next start sends it), else by the one that runs there now.
        // A reply's way back closed with the relay.
        guard !kept, !isReply else { return }
        switch RelayClaims.route(lateFor: key, generation: generation, keep: { queue.sync { keep(note, isReply: false) } }) {
        case .kept:
            break
        case .forward(let owner):
            owner.taken(note)
        case .lost:
            count { $0.dropped += 1 }
            Self.log("\(note.name) reached a closed relay after another one ran on its folder and closed; dropped")
        }
    }

    /// Writes a notification this group posted into the outbox, and hands the link what waits; on `queue`.
    private func keep(_ note: RelayedNotification, isReply: Bool) {
        // A reply goes back only for a request this side carried, while its time lasts.
        if isReply, replyRoutes[note.name] == nil { return }
        var deadline: Int64? = nil
        if routes.sends(request: note.name) {
            guard let archive = note.userInfo, let (_, remaining) = GroupNotificationCenter.requestTimeLeft(archive), remaining > 0 else {
                count { $0.dropped += 1 }
                Self.log("request \(note.name) not carried: expired, or not a request the relay can read (its userInfo must hold value classes only)")
                return
            }
            deadline = GroupNotificationCenter.uptimeNanoseconds + remaining
        }
        // Handed over again (a durable hand-over after a kill): it is in the outbox already.
        guard state.sent.isPast(poster: note.poster, sequence: note.sequence) else { return }
        guard outbox.count < Outbox.capacity else {
            count { $0.dropped += 1 }
            Self.log("relay outbox holds \(Outbox.capacity) notifications; \(note.name) dropped")
            return
        }
        let item = RelayItem(
            link: state.nextLink, poster: note.poster, sequence: note.sequence, name: note.name, object: note.object,
            userInfo: note.userInfo.map { Data($0) }, deadline: deadline)
        do {
            // The item is what counts: the numbering and the posters go on from it at the next start, and
            // the state is saved before an acknowledged item is removed.
            try outbox.add(item)
            state.nextLink += 1
            // Only once it is kept: one not kept is taken again if it is handed over again.
            _ = state.sent.advance(poster: note.poster, sequence: note.sequence)
        } catch {
            count { $0.dropped += 1 }
            Self.log("\(note.name) not kept for the other device: \(error)")
            return
        }
        count { $0.waiting = outbox.count }
        pump()
    }

    /// Hands the link what it does not hold yet: by message while the other side is reachable (a transfer if
    /// that fails), by transfer otherwise, in order, as many per payload as fit.
    private func pump() {
        let status = link.status
        guard !closed, status.canQueue else { return }
        let pending = outbox.items(after: handedThrough).filter { !handed.contains($0.link) }
        guard let last = pending.last?.link else { return }
        // Handed in order from here on: everything up to the last is handed once these are.
        handedThrough = last
        handed = handed.filter { $0 > last }
        let channel: RelayChannel = status.isReachable ? .message : .transfer
        for batch in batches(of: pending, for: channel) {
            send(batch, over: channel)
        }
        if contextDirty { updateContext() }
    }

    /// `items` in payloads that fit `channel`; an item that fits no payload of the transfer channel is replaced
    /// by a skip and reported.
    private func batches(of items: [RelayItem], for channel: RelayChannel) -> [[RelayItem]] {
        let limit = link.maximumPayloadSize(for: channel) - 256
        var batches: [[RelayItem]] = []
        var current: [RelayItem] = []
        var size = 0
        for var item in items {
            var itemSize = item.name.utf8.count + (item.object?.utf8.count ?? 0) + (item.userInfo?.count ?? 0) + 64
            if itemSize > link.maximumPayloadSize(for: .transfer) - 256 {
                let error = RelayLinkError(
                    .payloadTooLarge,
                    "\(item.name) (\(itemSize) bytes) does not fit the link's \(link.maximumPayloadSize(for: .transfer))-byte payloads; dropped")
                record(error)
                count { $0.dropped += 1 }
                try? outbox.skip(item.link)
                item = RelayItem(link: item.link, poster: 0, sequence: 0, name: "", skipped: true)
                itemSize = 64
            }
            if size + itemSize > limit, !current.isEmpty {
                batches.append(current)
                current = []
                size = 0
            }
            current.append(item)
            size += itemSize
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    private func send(_ batch: [RelayItem], over channel: RelayChannel) {
        let now = GroupNotificationCenter.uptimeNanoseconds
        // A request crosses with the time it has left now; one whose time is up crosses as a skip.
        let items = batch.map { item -> RelayItem in
            guard let deadline = item.deadline else { return item }
            guard deadline > now else {
                count { $0.dropped += 1 }
                Self.log("request \(item.name) expired before it could cross")
                return RelayItem(link: item.link, poster: 0, sequence: 0, name: "", skipped: true)
            }
            var crossing = item
            crossing.deadline = nil
            crossing.remaining = deadline - now
            return crossing
        }
        let envelope = RelayEnvelope(device: state.device, session: session, items: items, ack: acknowledgement)
        let payload: Data
        do {
            payload = try envelope.encoded()
        } catch {
            Self.log("relay payload not encoded: \(error)")
            return
        }
        count { $0.sent += items.count }
        if channel == .message, payload.count <= link.maximumPayloadSize(for: .message) {
            link.sendMessage(payload) { [weak self] error in
                guard let self, let error else { return }
                self.queue.async {
                    self.record(error)
                    // A message that may not have arrived goes as a transfer; a copy that did is dropped there.
                    self.transfer(payload, items: items)
                }
            }
        } else {
            transfer(payload, items: items)
        }
    }

    private func transfer(_ payload: Data, items: [RelayItem]) {
        do throws(RelayLinkError) {
            try link.transfer(payload)
        } catch {
            record(error)
            // Sent again when the link changes or on the next tick.
            unhand(items)
        }
    }

    /// What this side has applied of the other's, for the other.
    private var acknowledgement: Acknowledgement? {
        state.peer == 0 ? nil : Acknowledgement(device: state.peer, link: state.applied)
    }

    // MARK: Link events

    private func handle(_ event: RelayLinkEvent) {
        guard !closed else { return }
        switch event {
        case .statusChanged(let status):
            let was = published.withLock { $0.link }
            count { $0.link = status }
            if let error = Self.refusal(status), Self.refusal(was)?.code != error.code { record(error) }
            let wasQueueing = was.canQueue
            if status.canQueue, !wasQueueing { resendUnacknowledged() }
            pump()
            if status.canQueue, contextDirty { updateContext() }
        case .transferFinished(_, let error):
            if let error { record(error) }
        case .failed(let error):
            record(error)
        case .received(let payload, _):
            receive(payload)
        }
    }

    /// What keeps a link in `status` from queueing, as the error a send would meet; nil when it queues. A link
    /// not activated yet is not counted: it is on its way.
    private static func refusal(_ status: RelayLinkStatus) -> RelayLinkError? {
        switch status.activation {
        case .notActivated where status == .notActivated: return nil
        case .notActivated, .inactive: return RelayLinkError(.notActivated, "the link is \(status.activation.rawValue)")
        case .activated: break
        }
        if !status.isPaired { return RelayLinkError(.notPaired, "no counterpart device is paired") }
        if !status.isCounterpartInstalled { return RelayLinkError(.counterpartNotInstalled, "the counterpart app is not installed") }
        return nil
    }

    /// Takes `items` back from what was handed, so that the next pump hands them again.
    private func unhand(_ items: [RelayItem]) {
        guard let first = items.first?.link, first <= handedThrough else { return }
        // What was handed after them stays handed.
        for item in outbox.items(after: first - 1) where item.link <= handedThrough {
            if !items.contains(where: { $0.link == item.link }) { handed.insert(item.link) }
        }
        handedThrough = first - 1
    }

    /// After activation or a sign the other side restarted: what the link does not hold is handed to it again.
    private func resendUnacknowledged() {
        var held = Set<UInt64>()
        for payload in link.outstandingTransfers {
            guard let envelope = try? RelayEnvelope.decode(payload) else { continue }
            for item in envelope.items { held.insert(item.link) }
        }
        handed = held
        handedThrough = (outbox.lowest ?? state.nextLink) - 1
        contextDirty = true
    }

    private func receive(_ payload: Data) {
        let envelope: RelayEnvelope
        do {
            envelope = try RelayEnvelope.decode(payload)
        } catch {
            count { $0.dropped += 1 }
            Self.log("relay payload of \(payload.count) bytes dropped: \(error)")
            return
        }
        guard envelope.device != state.device else { return }
        if state.formerPeers?.contains(envelope.device) == true {
            count { $0.dropped += 1 }
            Self.log("a payload from the other device's earlier relay id dropped: what it held comes again under the new one")
            return
        }
        if envelope.device != state.peer {
            if state.peer != 0 { state.formerPeers = Array(((state.formerPeers ?? []) + [state.peer]).suffix(8)) }
            // The other app, installed anew (or for the first time): its numbering starts again.
            if state.peer != 0 { Self.log("the other device's relay changed identity; its numbering starts again") }
            state.peer = envelope.device
            state.applied = 0
            state.posted = PosterMarks()
            early = [:]
            earlyBytes = 0
        }
        // A new run of the other side's relay may have lost what it had been handed and not yet applied.
        let restarted = envelope.session != peerSession
        peerSession = envelope.session
        if let ack = envelope.ack, ack.device == state.device { acknowledge(ack.link) }
        if restarted { resendUnacknowledged() }
        if !envelope.items.isEmpty { apply(envelope.items) }
        if let entries = envelope.entries { apply(entries) }
        pump()
        if contextDirty { updateContext() }
    }

    private func acknowledge(_ link: UInt64) {
        guard let lowest = outbox.lowest, lowest <= link else { return }
        // Saved first: the numbers and posters of the items removed must not be used again.
        do {
            try state.save(to: stateFile)
        } catch {
            Self.log("relay state not saved (\(error)); acknowledged notifications stay in the outbox")
            return
        }
        outbox.acknowledge(upTo: link)
        handed = handed.filter { $0 > link }
        handedThrough = max(handedThrough, min(link, state.nextLink - 1))
        count { $0.waiting = outbox.count }
    }

    // MARK: Posting what the other device sent

    private func apply(_ items: [RelayItem]) {
        var progressed = false
        for item in items where item.link > state.applied && item.link < Limits.relayHighestLink && early[item.link] == nil {
            let bytes = item.userInfo?.count ?? 0
            // Past the bounds, held back no more: the other side sends it again.
            guard item.link == state.applied + 1 || (early.count < Self.maximumEarly && earlyBytes + bytes <= Limits.relayEarlyBytes)
            else { continue }
            early[item.link] = item
            earlyBytes += bytes
        }
        let duplicates = items.filter { $0.link <= state.applied }.count
        if duplicates > 0 { count { $0.duplicatesDropped += duplicates } }
        while let item = early.removeValue(forKey: state.applied + 1) {
            earlyBytes -= item.userInfo?.count ?? 0
            post(item)
            state.applied = item.link
            progressed = true
        }
        if progressed {
            do {
                try state.save(to: stateFile)
                postedLog.clear()
            } catch {
                Self.log("relay state not saved: \(error)")
            }
        }
        if progressed || duplicates > 0 {
            contextDirty = true
            sendAcknowledgement()
        }
    }

    private func post(_ item: RelayItem) {
        guard item.skipped != true else { return }
        guard state.posted.advance(poster: item.poster, sequence: item.sequence) else {
            count { $0.duplicatesDropped += 1 }
            return
        }
        let isReply = GroupNotificationCenter.isReplyName(item.name) && routes.sendsRequests
        guard isReply || routes.receives(notification: item.name) else {
            count { $0.dropped += 1 }
            Self.log("\(item.name) from the other device is not routed to this one; dropped")
            return
        }
        var userInfo = item.userInfo.map { [UInt8]($0) }
        if routes.receives(request: item.name) {
            guard let request = prepare(request: item) else { return }
            userInfo = request
        }
        do {
            // As the same poster and sequence each time it is posted: a copy posted again after a kill right
            // after the post is dropped by the listeners.
            try center.postRelayed(
                name: item.name, object: item.object, userInfo: userInfo, retain: false,
                stablePoster: state.device &* 0x9E37_79B9_7F4A_7C15 ^ state.peer, sequence: item.link)
            // At once: a relay killed after the post and before this record posts it again when it restarts.
            do {
                try postedLog.append(link: item.link, poster: item.poster, sequence: item.sequence)
            } catch {
                Self.log("relay log not written (\(error)); saving the state instead")
                try? state.save(to: stateFile)
            }
            count { $0.posted += 1 }
        } catch {
            count { $0.dropped += 1 }
            Self.log("\(item.name) from the other device not posted: \(error)")
        }
    }

    /// A request from the other side, stamped anew with the time it has left, and its replies' way back
    /// opened; nil (dropped and counted) when its time is up or it cannot be read.
    private func prepare(request item: RelayItem) -> [UInt8]? {
        do {
            let longest = Int64(Limits.maximumRequestTimeout / .nanoseconds(1))
            guard let remaining = item.remaining.map({ min($0, longest) }), remaining > 0, let archive = item.userInfo.map({ [UInt8]($0) }),
                let (replyTo, _) = GroupNotificationCenter.requestTimeLeft(archive)
            else { throw RelayLinkError(.failed, "its time is up, or it does not say where to reply") }
            let restamped = try GroupNotificationCenter.restampedRequest(archive, remaining: remaining)
            let until = GroupNotificationCenter.uptimeNanoseconds + remaining
            if let open = replyRoutes[replyTo] {
                replyRoutes[replyTo] = (open.token, max(open.until, until))
            } else {
                if replyCenter == nil { replyCenter = try GroupNotificationCenter(containerURL: center.containerURL) }
                guard let replyCenter else { return nil }
                // Before the request is posted, so that no reply comes before its way back is open.
                let token = replyCenter.addRelayObserver(forName: replyTo) { [weak self] in self?.taken($0) }
                replyRoutes[replyTo] = (token, until)
            }
            return restamped
        } catch {
            count { $0.dropped += 1 }
            Self.log("request \(item.name) from the other device dropped: \(error)")
            return nil
        }
    }

    /// Closes the ways back of requests whose time is up.
    private func closeExpiredReplyRoutes() {
        let now = GroupNotificationCenter.uptimeNanoseconds
        for (name, route) in replyRoutes where route.until <= now {
            replyCenter?.removeObserver(route.token)
            replyRoutes[name] = nil
        }
    }

    /// Tells the other side at once, while it is reachable; the context says it too.
    private func sendAcknowledgement() {
        guard link.status.isReachable, let ack = acknowledgement else { return }
        let envelope = RelayEnvelope(device: state.device, session: session, ack: ack)
        guard let payload = try? envelope.encoded() else { return }
        link.sendMessage(payload) { _ in }
    }

    // MARK: Retained notifications and group values

    /// Stamps what changed here since the relay last looked.
    private func scan() {
        guard !closed else { return }
        for (entry, direction) in routes.synced where direction.sends {
            guard let local = read(entry) else { continue }
            let known = state.entries[entry.key]
            if known?.mark == local.mark { continue }
            if local.relayed, let known, known.mark == nil {
                // Written by this relay, which was stopped before it noted it.
                state.entries[entry.key] = .init(stamp: known.stamp, mark: local.mark)
            } else if local.relayed {
                state.entries[entry.key] = .init(stamp: known?.stamp ?? .zero, mark: local.mark)
            } else if known == nil, !local.content.present, neverWritten(entry) {
                // Nothing written here that this relay saw: no write, and never one that wins over the other
                // device's (a relay that scans late would otherwise undo a value set there meanwhile).
                state.entries[entry.key] = .init(stamp: .zero, mark: local.mark)
            } else {
                let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
                let after = known?.stamp.time ?? 0
                let stamp = Stamp(time: max(now, after == .max ? after : after + 1), device: state.device)
                state.entries[entry.key] = .init(stamp: stamp, mark: local.mark)
            }
            contextDirty = true
        }
        if contextDirty {
            try? state.save(to: stateFile)
            updateContext()
        }
    }

    /// Whether `entry` was never written in this container, as far as can be told: a value with no version at
    /// all; a retained name with none now (a clear leaves nothing to tell it by).
    private func neverWritten(_ entry: SyncedEntry) -> Bool {
        switch entry.kind {
        case .retained: return true
        case .value: return (try? center.relayedValue(named: entry.name).newest) == 0
        }
    }

    /// The local content of `entry`: which it is, whether a relay wrote it, and what crosses.
    private func read(_ entry: SyncedEntry) -> (mark: String, relayed: Bool, content: SyncedEntry.Content)? {
        switch entry.kind {
        case .retained:
            guard let note = center.retainedRelayedNotification(named: entry.name) else {
                return ("none", false, .init(entry: entry, stamp: .zero, present: false))
            }
            return (
                "r\(note.poster)-\(note.sequence)", note.isRelayed,
                .init(entry: entry, stamp: .zero, present: true, object: note.object, archive: note.userInfo.map { Data($0) })
            )
        case .value:
            do {
                let value = try center.relayedValue(named: entry.name)
                return (
                    "v\(value.version)", value.isRelayed,
                    .init(entry: entry, stamp: .zero, present: value.archive != nil, archive: value.archive.map { Data($0) })
                )
            } catch {
                Self.log("value \(entry.name) not read: \(error)")
                return nil
            }
        }
    }

    /// Applies what the other side holds where it is later than what this side holds.
    private func apply(_ entries: [SyncedEntry.Content]) {
        scan()
        for incoming in entries {
            guard routes.synced.contains(where: { $0.entry == incoming.entry && $0.direction.receives }) else { continue }
            let known = state.entries[incoming.entry.key]
            guard incoming.stamp > (known?.stamp ?? .zero) else { continue }
            let lead = UInt64(Limits.relayStampLead / .milliseconds(1))
            guard incoming.stamp.time <= UInt64(max(0, Date().timeIntervalSince1970 * 1000)) + lead else {
                count { $0.dropped += 1 }
                Self.log("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from the other device is stamped more than a day ahead of this device's clock; not applied")
                continue
            }
            // Noted before it is written: a relay stopped in between knows the write is its own.
            state.entries[incoming.entry.key] = .init(stamp: incoming.stamp, mark: nil)
            try? state.save(to: stateFile)
            do {
                try write(incoming)
                count { $0.valuesApplied += 1 }
            } catch {
                count { $0.dropped += 1 }
                Self.log("\(incoming.entry.kind.rawValue) \(incoming.entry.name) from the other device not applied: \(error)")
                // Not written: what this side held stays noted as it was, so that it is not taken for a newer write.
                state.entries[incoming.entry.key] = known
                try? state.save(to: stateFile)
                continue
            }
            // What the relay wrote, unless a write of this group came in between: that one stays unnoted, and the
            // next scan stamps it as this group's.
            if let local = read(incoming.entry), local.relayed || (!incoming.present && !local.content.present) {
                state.entries[incoming.entry.key] = .init(stamp: incoming.stamp, mark: local.mark)
            }
            try? state.save(to: stateFile)
            contextDirty = true
        }
    }

    private func write(_ content: SyncedEntry.Content) throws {
        let name = content.entry.name
        switch content.entry.kind {
        case .retained:
            if content.present {
                try center.postRelayed(name: name, object: content.object, userInfo: content.archive.map { [UInt8]($0) }, retain: true)
            } else {
                center.clearRetainedNotification(named: Notification.Name(name))
            }
        case .value:
            for _ in 0..<8 {
                let newest = try center.relayedValue(named: name).newest
                if try center.publishRelayedValue(named: name, archive: content.present ? content.archive.map { [UInt8]($0) } : nil, after: newest) != nil {
                    return
                }
            }
            throw RelayLinkError(.failed, "other processes kept writing it")
        }
    }

    /// Hands the link this side's context: what it has applied, and its retained notifications and values.
    private func updateContext() {
        guard link.status.canQueue else { return }
        var entries: [SyncedEntry.Content] = []
        for (entry, direction) in routes.synced where direction.sends {
            guard let known = state.entries[entry.key], known.mark != nil, var content = read(entry)?.content else { continue }
            content.stamp = known.stamp
            entries.append(content)
        }
        var envelope = RelayEnvelope(device: state.device, session: session, ack: acknowledgement, entries: entries)
        do {
            var payload = try envelope.encoded()
            if payload.count > link.maximumPayloadSize(for: .context) {
                // Said once per change; the acknowledgement still goes, so that the other side's outbox empties.
                record(RelayLinkError(
                    .payloadTooLarge,
                    "the retained notifications and group values come to \(payload.count) bytes, over the link's \(link.maximumPayloadSize(for: .context))-byte context; they do not cross until they are smaller"))
                count { $0.dropped += 1 }
                envelope.entries = []
                payload = try envelope.encoded()
            }
            try link.updateContext(payload)
            contextDirty = false
        } catch let error as RelayLinkError {
            record(error)
        } catch {
            Self.log("relay context not encoded: \(error)")
        }
    }

    // MARK: Status

    private func record(_ error: RelayLinkError) {
        count {
            $0.errors[error.code, default: 0] += 1
            $0.lastError = error
        }
        Self.log("link: \(error)")
    }

    private func count(_ change: (inout RelayStatus) -> Void) {
        let status = published.withLock { status in
            change(&status)
            return status
        }
        for continuation in watchers.withLock({ Array($0.values) }) { continuation.yield(status) }
    }

    var status: RelayStatus {
        var status = published.withLock { $0 }
        status.link = link.status
        return status
    }

    func statuses() -> AsyncStream<RelayStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: RelayStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = UInt64.random(in: 1...UInt64.max)
        continuation.yield(status)
        watchers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.watchers.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }
}
