/// One (name, object) pair a listening process observes; nil means "any", as in Foundation, except that a nil
/// name matches no reserved name (``ReservedNames``): requests and replies reach only who names them.
struct Subscription: Hashable, Sendable {
    var name: String?
    var object: String?

    func matches(name notificationName: String, object notificationObject: String?) -> Bool {
        if let name {
            if name != notificationName { return false }
        } else if ReservedNames.isReserved(notificationName) {
            return false
        }
        if let object, object != notificationObject { return false }
        return true
    }
}
