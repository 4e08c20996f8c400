import SwiftUI

/// The app: the cart's items, and a button that adds one. Its model answers CountItems and reloads the widget
/// while the app runs.
@main
struct CartApp: App {
    @State private var model = CartModel()

    var body: some Scene {
        WindowGroup {
            CartView(model: model)
        }
    }
}
