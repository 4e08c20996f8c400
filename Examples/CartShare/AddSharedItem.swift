import Foundation
import Wormhole

/// Adds what the user shared to the cart: the shared value, then CartChanged, so the app and the widget see it
/// whether the app runs or not. Only the first line counts, at most 100 characters: an item, not a document.
/// - Returns: Whether an item was added (false for a text with nothing but blanks).
/// - Throws: When the group's container cannot be opened or written.
@discardableResult
func addSharedItem(_ text: String) throws -> Bool {
    let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    let item = String(line.trimmingCharacters(in: .whitespaces).prefix(100))
    guard !item.isEmpty else { return false }
    let center = try GroupNotificationCenter(groupIdentifier: Cart.group)
    try Cart.add(item, in: center)
    return true
}
