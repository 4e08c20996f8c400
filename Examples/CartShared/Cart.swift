import Foundation
import Wormhole

/// What the app, its widget and its share extension agree on: the App Group, the shared value and the widget.
///
/// Declared `nonisolated`, as is every type of this folder, so that a target whose default isolation is the main
/// actor (a new Xcode 26 app) can use it from any thread; in a package target the word changes nothing.
public nonisolated enum Cart {
    /// The App Group all three targets enable, whose container Wormhole talks through.
    public static let group = "group.com.example.cart"
    /// The name of the group value that holds the cart's items.
    public static let itemsName = "cart.items"
    /// The widget's kind, which the app reloads when the cart changes.
    public static let widgetKind = "CartWidget"

    /// The cart's items: a value in the group's container that every process reads and updates.
    /// - Parameters:
    ///   - center: A center on the group's container.
    ///   - tracksChanges: Whether reading it watches for other processes' changes. nil, the default: a read on the
    ///     main thread does (a view that shows it), a read elsewhere does not (the widget's timeline provider);
    ///     `false` for a value read once on the main thread and dropped.
    public static func items(in center: GroupNotificationCenter, tracksChanges: Bool? = nil) -> GroupValue<[String]> {
        GroupValue(itemsName, default: [], in: center, queue: .main, tracksChanges: tracksChanges)
    }

    /// Adds `item` to the cart, then tells every process with ``CartChanged``.
    /// - Returns: The items after the change.
    /// - Throws: When the container cannot be written; the cart is then as it was.
    @discardableResult
    public static func add(_ item: String, in center: GroupNotificationCenter) throws -> [String] {
        let cart = try items(in: center).update { items in
            items.append(item)
            return items
        }
        center.post(CartChanged(items: cart))
        return cart
    }
}
