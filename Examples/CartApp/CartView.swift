import SwiftUI
import WormholeUI

/// The cart's items, redrawn when any process changes them (the share extension too), and an Add button.
struct CartView: View {
    @GroupStorage(Cart.itemsName, group: Cart.group) private var items: [String] = []
    let model: CartModel

    var body: some View {
        NavigationStack {
            List(Array(items.enumerated()), id: \.offset) { _, item in
                Text(item)
            }
            .navigationTitle("Cart")
            .toolbar {
                Button("Add") { model.add() }
            }
            .overlay {
                if let problem = model.problem { Text(problem).foregroundStyle(.red) }
            }
        }
    }
}
