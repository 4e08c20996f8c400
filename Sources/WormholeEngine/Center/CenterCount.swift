import Synchronization

/// How many centers use one endpoint: the last to go away closes it, and a closed endpoint takes no new one.
struct CenterCount: ~Copyable, Sendable {
    /// nil once closed.
    private let count = Mutex<Int?>(0)

    /// Counts a new center; false when the endpoint is closed already.
    func adopt() -> Bool {
        count.withLock { count in
            guard let current = count else { return false }
            count = current + 1
            return true
        }
    }

    /// Counts a center gone; true when it was the last, and the endpoint is now closed.
    func release() -> Bool {
        count.withLock { count -> Bool in
            guard let current = count else { return false }
            count = current > 1 ? current - 1 : nil
            return current <= 1
        }
    }

    /// Closes the endpoint to new centers.
    func close() {
        count.withLock { $0 = nil }
    }
}
