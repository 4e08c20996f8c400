import Foundation
import Wormhole

/// Asks the app how many items the cart holds; the app answers while it runs.
public nonisolated struct CountItems: GroupRequest {
    public typealias Reply = Int
    public static let name = Notification.Name("cart.count-items")

    public init() {}
}
