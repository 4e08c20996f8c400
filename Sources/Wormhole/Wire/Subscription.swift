/// One (name, object) pair a listening process observes; nil means "any", as in Foundation.
struct Subscription: Hashable, Sendable {
    var name: String?
    var object: String?

    func matches(name notificationName: String, object notificationObject: String?) -> Bool {
        if let name, name != notificationName { return false }
        if let object, object != notificationObject { return false }
        return true
    }
}
