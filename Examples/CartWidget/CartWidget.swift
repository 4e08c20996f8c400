import SwiftUI
import WidgetKit
import Wormhole

/// The cart at one moment.
struct CartEntry: TimelineEntry {
    let date: Date
    let items: [String]
}

/// Reads the cart once per timeline, which keeps the widget from listening; the app's WidgetReloader reloads the
/// timeline whenever any process changes the cart.
struct CartProvider: TimelineProvider {
    func placeholder(in context: Context) -> CartEntry {
        CartEntry(date: .now, items: ["apples", "bread"])
    }

    func getSnapshot(in context: Context, completion: @escaping (CartEntry) -> Void) {
        completion(entry())
    }

    func getTimeline(in context: Context, completion: @escaping (Timeline<CartEntry>) -> Void) {
        completion(Timeline(entries: [entry()], policy: .never))
    }

    private func entry() -> CartEntry {
        // No container (no App Group entitlement): an empty cart.
        let center = try? GroupNotificationCenter(groupIdentifier: Cart.group)
        return CartEntry(date: .now, items: center.map { Cart.items(in: $0).value } ?? [])
    }
}

struct CartWidgetView: View {
    let entry: CartEntry

    var body: some View {
        VStack(alignment: .leading) {
            Text("\(entry.items.count) in the cart").font(.headline)
            ForEach(Array(entry.items.suffix(3).enumerated()), id: \.offset) { _, item in
                Text(item).font(.caption)
            }
        }
        .containerBackground(.fill.tertiary, for: .widget)
    }
}

@main
struct CartWidget: Widget {
    var body: some WidgetConfiguration {
        StaticConfiguration(kind: Cart.widgetKind, provider: CartProvider()) { entry in
            CartWidgetView(entry: entry)
        }
        .configurationDisplayName("Cart")
        .description("What the shopping cart holds.")
    }
}
