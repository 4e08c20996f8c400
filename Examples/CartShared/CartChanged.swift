import Foundation
import Wormhole

/// Posted by whoever changed the cart (the app, the share extension), with the items it now holds.
public nonisolated struct CartChanged: GroupMessage {
    public static let name = Notification.Name("cart.changed")
    public var items: [String]

    public init(items: [String]) {
        self.items = items
    }
}
