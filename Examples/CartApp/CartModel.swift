import Foundation
import Observation
import Wormhole
import WormholeUI

/// What the app keeps while it runs: its center, a responder that answers CountItems, and a reloader that reloads
/// the widget whenever any process changes the cart.
@MainActor @Observable
final class CartModel {
    /// Why the cart cannot be changed (no App Group entitlement, a container that cannot be opened), or nil.
    private(set) var problem: String?

    @ObservationIgnored private let center: GroupNotificationCenter?
    @ObservationIgnored private let reloader: WidgetReloader?
    private static let samples = ["apples", "bread", "milk", "eggs", "coffee"]

    init() {
        do {
            let center = try GroupNotificationCenter(groupIdentifier: Cart.group)
            let items = Cart.items(in: center)
            center.addResponder(for: CountItems.self) { _ in items.value.count }   // on the main actor
            reloader = WidgetReloader(kinds: [Cart.widgetKind], center: center, values: [Cart.itemsName])
            self.center = center
        } catch {
            center = nil
            reloader = nil
            problem = "The cart is not shared: \(error)"
        }
    }

    /// Adds a sample item: updates the shared value and posts CartChanged.
    func add() {
        guard let center else { return }
        let count = Cart.items(in: center, tracksChanges: false).value.count
        do {
            try Cart.add(Self.samples[count % Self.samples.count], in: center)
        } catch {
            problem = "Not added: \(error)"
        }
    }
}
