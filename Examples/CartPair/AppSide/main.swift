// The app's side of the pair: answers CountItems, and adds items to the cart, posting CartChanged for each.
// Then it keeps answering until stopped (Ctrl-C), as an app does while it runs.
//
//     swift run cart-app-side [ITEM ...]    # default: apples bread milk
import CartShared
import Foundation
import Wormhole

/// Prints a line at once, also into a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let items = CommandLine.arguments.count > 1 ? Array(CommandLine.arguments.dropFirst()) : ["apples", "bread", "milk"]
let center = try GroupNotificationCenter(groupIdentifier: Cart.group)
let cart = Cart.items(in: center)
try cart.reset()                                    // a fresh cart on each run
center.addResponder(for: CountItems.self) { _ in    // on the main actor, which dispatchMain() below runs
    let count = cart.value.count
    say("app: answered CountItems with \(count)")
    return count
}
for item in items {
    let now = try Cart.add(item, in: center)
    say("app: added \(item); the cart holds \(now.count)")
}
say("app: answering CountItems until stopped")
dispatchMain()
