/// When a ``WidgetReloader`` reloads: at once for a change when none was made for an interval (the leading
/// edge), else once at the end of the interval for every change that came in it (the trailing edge). So reloads
/// are at least an interval apart, a lone change is shown at once, and the last change of a burst is always shown.
///
/// A value that only decides, on instants it is given, so that it is tested on a clock of the test's own.
struct ReloadThrottle {
    enum Decision: Equatable {
        /// Reload now.
        case reload
        /// Reload at this instant, and tell ``due(at:)`` then.
        case schedule(ContinuousClock.Instant)
        /// A reload is scheduled already, and will show this change.
        case none
    }

    let interval: Duration
    private var lastReload: ContinuousClock.Instant?
    private var scheduled: ContinuousClock.Instant?

    init(interval: Duration) {
        self.interval = interval
    }

    /// Something changed at `now`.
    mutating func changed(at now: ContinuousClock.Instant) -> Decision {
        if scheduled != nil { return .none }
        if let lastReload, now < lastReload + interval {
            let at = lastReload + interval
            scheduled = at
            return .schedule(at)
        }
        lastReload = now
        return .reload
    }

    /// The instant a ``Decision/schedule(_:)`` named came, at `now`: whether to reload.
    mutating func due(at now: ContinuousClock.Instant) -> Bool {
        guard scheduled != nil else { return false }
        scheduled = nil
        lastReload = now
        return true
    }
}
