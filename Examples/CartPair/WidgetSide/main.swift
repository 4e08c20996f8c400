// The widget's side of the pair: watches CartChanged, then reads the shared value as a timeline provider does,
// asks the app CountItems, and exits. Start it before the app side: it sees the changes made after it started.
//
//     swift run cart-widget-side [CHANGES]    # default 3: the app side's three items
import CartShared
import Foundation
import Wormhole

/// Prints a line at once, also into a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let expected = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 3
let center = try GroupNotificationCenter(groupIdentifier: Cart.group)
let changes = center.messages(for: CartChanged.self)    // observing from here on
say("widget: watching \(Cart.group)")
Task {
    try await Task.sleep(for: .seconds(60))
    say("widget: no word from the app in 60 s: is cart-app-side running?")
    exit(1)
}
var seen = 0
for await change in changes {
    say("widget: cart changed: \(change.items.joined(separator: ", "))")
    seen += 1
    if seen == expected { break }
}
say("widget: \(Cart.itemsName) holds \(Cart.items(in: center).value.joined(separator: ", "))")
do {
    let count = try await center.request(CountItems(), timeout: .seconds(5))
    say("widget: the app counts \(count) items")
} catch {
    say("widget: the app did not answer: \(error)")
    exit(1)
}
