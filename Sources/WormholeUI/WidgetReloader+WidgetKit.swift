#if canImport(WidgetKit)
import Foundation
import WidgetKit
import Wormhole

extension WidgetReloader {
    /// A reloader that reloads with WidgetKit: `WidgetCenter.shared.reloadTimelines(ofKind:)` for each kind, on
    /// the main actor.
    /// - Parameters:
    ///   - kinds: The widget kinds to reload on a change, as their `Widget`'s `kind`.
    ///   - center: The center whose container the changes are made in; it observes through it.
    ///   - names: Notifications that are changes, posted by any process with any object.
    ///   - values: Names of group values whose changes are changes.
    ///   - interval: The shortest time between two reloads; ``defaultInterval`` by default.
    public convenience init(
        kinds: [String], center: GroupNotificationCenter, names: [Notification.Name] = [], values: [String] = [],
        interval: Duration = defaultInterval
    ) {
        self.init(kinds: kinds, center: center, names: names, values: values, interval: interval) { kind in
            Task { @MainActor in WidgetCenter.shared.reloadTimelines(ofKind: kind) }
        }
    }
}
#endif
