import Dispatch
import Foundation
import Synchronization
import Wormhole

/// Reloads the timelines of an app's widgets when chosen notifications or group values change, at most once per
/// interval: what an app does by hand with `WidgetCenter.shared.reloadTimelines(ofKind:)` after each change.
///
/// ```swift
/// let reloader = WidgetReloader(kinds: ["CartWidget"], center: center,
///                               names: [.init("cart.changed")], values: ["cart.count"])
/// ```
///
/// Any process of the group may make the change (the app, an intent's or a share extension, this process):
/// the reloader observes it through its center, so it reloads from the process that holds it, usually the app.
/// A widget has a daily budget of reloads, but the reloads an app makes while it is in the foreground do not
/// count against it; those it makes from the background do. So the first change after a quiet interval reloads
/// at once (while the app that made it is most likely still in the foreground), and the changes that follow
/// within the interval are folded into one reload at its end: reloads are at least `interval` apart, and the last
/// change of a burst is always shown. An app that changes its values from the background (a background task, a
/// push) should pass a longer interval, or reload itself.
///
/// Keep it as long as changes should reload: when it goes away it stops observing, and a reload it had scheduled
/// is not made. Changes to values are seen through the notification each change posts, so a change whose writer
/// was killed before announcing it reloads nothing until the next one.
public final class WidgetReloader: Sendable {
    /// The interval the initializers take unless told otherwise: 2 seconds.
    public static let defaultInterval: Duration = Limits.widgetReloadInterval

    /// The widget kinds reloaded, as their `Widget`'s `kind`.
    public let kinds: [String]
    /// The shortest time between two reloads.
    public let interval: Duration

    private let center: GroupNotificationCenter
    private let reload: @Sendable (String) -> Void
    private let throttle: Mutex<ReloadThrottle>
    private let observers: Tokens
    /// Where reloads are made, one after another.
    private let reloads = DispatchQueue(label: "WormholeUI.WidgetReloader")

    /// A reloader that calls `reload` with each kind in `kinds` to reload it: a test's own, or an effect other
    /// than WidgetKit's. (Where WidgetKit exists, the initializer without `reload` calls `WidgetCenter`.)
    /// - Parameters:
    ///   - kinds: The widget kinds to reload on a change.
    ///   - center: The center whose container the changes are made in; it observes through it.
    ///   - names: Notifications that are changes, posted by any process with any object.
    ///   - values: Names of group values whose changes are changes.
    ///   - interval: The shortest time between two reloads; ``defaultInterval`` by default.
    ///   - reload: Called with each kind to reload, on a serial queue of the reloader's, never twice at once.
    public init(
        kinds: [String], center: GroupNotificationCenter, names: [Notification.Name] = [], values: [String] = [],
        interval: Duration = defaultInterval, reload: @escaping @Sendable (_ kind: String) -> Void
    ) {
        self.kinds = kinds
        self.interval = interval
        self.center = center
        self.reload = reload
        throttle = Mutex(ReloadThrottle(interval: interval))
        let watched = names + values.map { GroupValue<Int>.notificationName(for: $0) }
        let box = WeakReloader()
        observers = Tokens(all: watched.map { name in
            center.addObserver(forName: name, object: nil, queue: nil) { _ in box.reloader?.changed() }
        })
        box.reloader = self
    }

    deinit {
        for observer in observers.all { center.removeObserver(observer) }
    }

    /// Tells the reloader of a change it cannot observe (one this process made outside Wormhole): it reloads as
    /// for a change it observed.
    public func changed() {
        // Decided where the reloads are called, just before one: the calls are an interval apart, however long
        // the queue took to get to them.
        reloads.async { [self] in decide() }
    }

    private func decide() {
        switch throttle.withLock({ $0.changed(at: .now) }) {
        case .reload:
            reloadAll()
        case .schedule(let at):
            let (seconds, attoseconds) = (at - .now).components
            let delay = max(0, Double(seconds) + Double(attoseconds) / 1e18)
            reloads.asyncAfter(deadline: .now() + delay) { [weak self] in
                guard let self, throttle.withLock({ $0.due(at: .now) }) else { return }
                reloadAll()
            }
        case .none:
            break
        }
    }

    private func reloadAll() {
        for kind in kinds { reload(kind) }
    }
}

/// The observers' tokens, only ever handed back to `removeObserver`: safe to share, though the tokens are not
/// `Sendable`.
private struct Tokens: @unchecked Sendable {
    let all: [any NSObjectProtocol]
}

/// The reloader its observers tell, once it is made: they are added in its initializer, before `self` may be
/// captured.
private final class WeakReloader: Sendable {
    private let reference = Mutex<WeakReference?>(nil)

    private struct WeakReference {
        weak var reloader: WidgetReloader?
    }

    var reloader: WidgetReloader? {
        get { reference.withLock { $0?.reloader } }
        set { reference.withLock { $0 = WeakReference(reloader: newValue) } }
    }
}
