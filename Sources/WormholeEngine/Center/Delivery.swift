import Foundation
import Synchronization

/// The receiving side of a process in one container: its observers, and the handing of received frames to
/// them, each userInfo decoded once per set of allowed classes.
final class Delivery: Sendable {
    private let observers = Mutex(ObserverTable())
    /// How many times observers were removed: a spool's hand-over checks it (``SpoolReader/Handlers``).
    let removals = Atomic<UInt64>(0)
    private let counters: Counters
    /// The highest sequence delivered of each relay's poster (``RelayMark``): a relay killed between posting and
    /// recording it posts the same again, which is dropped here.
    private let relayed = Mutex<[UInt64: UInt64]>([:])

    init(counters: Counters) {
        self.counters = counters
    }

    /// Adds `observer`; returns whether its subscription is new, so the registry must change.
    func add(_ observer: Observer) -> Bool {
        observers.withLock { $0.add(observer) }
    }

    /// Removes the observers `shouldRemove` picks, and stops their pending deliveries. Returns whether the
    /// subscriptions changed.
    func remove(where shouldRemove: (Observer) -> Bool) -> Bool {
        let (removed, changed) = observers.withLock { $0.remove(where: shouldRemove) }
        if !removed.isEmpty { removals.add(1, ordering: .releasing) }
        removed.forEach { $0.deactivate() }
        return changed
    }

    /// The distinct subscriptions of the observers, as the registry records them.
    var subscriptions: [Subscription] { observers.withLock { $0.subscriptions } }

    func hasMatch(name: String, object: String?) -> Bool {
        observers.withLock { $0.hasMatch(name: name, object: object) }
    }

    /// Hands frames read by the receive thread to the matching observers: those without a queue run on it, through
    /// `runningObserverCode` (``DeliveryBatch/dispatch(backlog:runningObserverCode:)``).
    ///
    /// What goes to observers' queues, actors and sequences is held in `backlog` until those observers have run.
    /// With `keepingUnmatched`, returns the frames no observer matched; otherwise none.
    @discardableResult
    func deliver(
        _ frames: [Frame], backlog: DeliveryBacklog?, keepingUnmatched: Bool = false,
        acknowledging acknowledgement: SpoolAcknowledgement? = nil, runningObserverCode: (() -> Void) -> Void
    ) -> [Frame] {
        var unmatched: [Frame]? = keepingUnmatched ? [] : nil
        batch(of: frames, unmatched: &unmatched).dispatch(
            backlog: backlog, acknowledging: acknowledgement, runningObserverCode: runningObserverCode)
        return unmatched ?? []
    }

    /// Hands frames of this process's own posts, from another thread than the receive thread, to the matching
    /// observers. Returns what those without a queue are to run, on the receive thread
    /// (``DeliveryBatch/dispatchFromAnotherThread(backlog:)``).
    func deliverFromAnotherThread(_ frames: [Frame], backlog: DeliveryBacklog?) -> (@Sendable () -> Void)? {
        var unmatched: [Frame]? = nil
        return batch(of: frames, unmatched: &unmatched).dispatchFromAnotherThread(backlog: backlog)
    }

    /// The deliveries of `frames` to the matching observers, counted; the frames no observer matched are added to
    /// `unmatched` when it is not nil.
    ///
    /// A userInfo is decoded once per set of allowed classes, and once for a run of frames that carry the same
    /// compact archive (a poster repeating itself): it holds only values, so the frames may share what it decodes to.
    private func batch(of frames: [Frame], unmatched: inout [Frame]?) -> DeliveryBatch {
        var batch = DeliveryBatch()
        var received = 0
        var rejected = 0
        var decoded = DecodedUserInfos()
        // The observers as they are now, once for the batch: one removed meanwhile runs nothing (``Observer/call(_:)``,
        // ``ObserverQueue``).
        let observers = self.observers.withLock { $0.observers }
        // By index: a `for frame in frames` took a copy of each frame as well, retaining its strings and archive.
        for index in frames.indices {
            let frame = frames[index]
            if RelayMark.isRelayed(frame.poster), !isNew(relayed: frame) { continue }
            var matched = false
            for observer in observers where observer.subscription.matches(name: frame.name, object: frame.object) {
                if !matched {
                    matched = true
                    received += 1
                    if let archive = frame.userInfo { decoded.use(archive) }
                }
                if observer.takesFrames {
                    batch.add(frameTaker: observer, frame: frame)
                    continue
                }
                var userInfo: [AnyHashable: Any]? = nil
                if let archive = frame.userInfo {
                    if let known = decoded.userInfo(forClasses: observer.allowed.key) {
                        userInfo = known
                        // Refused again: counted for each delivery, said once.
                        if known == nil { rejected += 1 }
                    } else {
                        userInfo = Self.decodeUserInfo(archive, of: frame.name, allowed: observer.allowed, rejected: &rejected)
                        decoded.record(userInfo, forClasses: observer.allowed.key)
                    }
                }
                batch.add(observer, frame: frame, userInfo: userInfo)
            }
            if !matched { unmatched?.append(frame) }
        }
        if received > 0 || rejected > 0 {
            counters.count {
                $0.received += received
                $0.userInfoRejected += rejected
            }
        }
        return batch
    }

    /// Whether `frame`, from a relay, comes after what was delivered of its poster; records it if so. A relay
    /// posts each poster's frames in order of their sequences, and a copy it posts again is its last, or close
    /// to it: only a frame at most ``Limits/relayCopyWindow`` behind the last is taken for a copy, so that a
    /// forged frame far ahead cannot hold back more than that many of the relay's next ones.
    private func isNew(relayed frame: Frame) -> Bool {
        relayed.withLock { relayed in
            if let last = relayed[frame.poster], last >= frame.sequence, last - frame.sequence < Limits.relayCopyWindow {
                return false
            }
            if relayed[frame.poster] == nil, relayed.count >= Limits.rememberedPosters { relayed.removeAll() }
            relayed[frame.poster] = frame.sequence
            return true
        }
    }

    /// A frame's userInfo as an observer with `allowed` classes sees it: nil, with a warning, when refused.
    static func decodeUserInfo(_ archive: ArchiveBytes, of name: String, allowed: AllowedClasses, rejected: inout Int)
        -> [AnyHashable: Any]?
    {
        do throws(WormholeError) {
            return try UserInfoCodec.decode(archive, allowed: allowed)
        } catch {
            rejected += 1
            Log.warning("userInfo of \(name) withheld from an observer: \(error)")
            return nil
        }
    }

    /// `frame`, the retained notification of `name`, as an observer with `allowed` classes sees it, which post it
    /// was, and its bytes.
    func notification(_ frame: Frame, named name: String, allowed: AllowedClasses) -> (Notification, FrameIdentity, Int) {
        var rejected = 0
        let userInfo = frame.userInfo.flatMap { Self.decodeUserInfo($0, of: name, allowed: allowed, rejected: &rejected) }
        if rejected > 0 { counters.count { $0.userInfoRejected += rejected } }
        return (Notification(name: Notification.Name(name), object: frame.object, userInfo: userInfo), FrameIdentity(frame), frame.byteCount)
    }
}
