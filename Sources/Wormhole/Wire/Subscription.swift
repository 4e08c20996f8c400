/// One (name, object) pair a listening process observes; nil means "any", as in Foundation, except that a nil
/// name matches no reserved name (``ReservedNames``): requests and replies reach only who names them.
struct Subscription: Hashable, Sendable {
    var name: String?
    var object: String?

    func matches(name notificationName: String, object notificationObject: String?) -> Bool {
        if let name {
            // Lengths first: names of another length, most of those an observer does not observe, differ without
            // a comparison of their characters.
            if name.utf8.count != notificationName.utf8.count || name != notificationName { return false }
        } else if ReservedNames.isReserved(notificationName) {
            return false
        }
        if let object, object != notificationObject { return false }
        return true
    }
}
