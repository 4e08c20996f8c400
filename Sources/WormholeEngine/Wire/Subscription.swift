/// One (name, object) pair a listening process observes; nil means "any", as in Foundation, except that a nil
/// name matches no reserved name (``ReservedNames``): requests and replies reach only who names them.
package struct Subscription: Hashable, Sendable {
    package var name: String?
    package var object: String?

    package init(name: String?, object: String?) {
        self.name = name
        self.object = object
    }

    package func matches(name notificationName: String, object notificationObject: String?) -> Bool {
        if let name {
            if name != notificationName { return false }
        } else if ReservedNames.isReserved(notificationName) {
            return false
        }
        if let object, object != notificationObject { return false }
        return true
    }
}
