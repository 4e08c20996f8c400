import Foundation

/// The observer behind an async sequence (``GroupNotifications``, ``GroupMessages``), shared by the sequence and
/// its iterators: its consumer takes each notification from the observer's ``ObserverQueue``. The observer is removed
/// when the consumer's task is cancelled, or when the sequence and its iterators are all gone; then what waits
/// is dropped and its backlog released.
package final class SequenceObserver: Sendable {
    private let endpoint: Endpoint
    private let observer: Observer
    private let observerQueue: ObserverQueue

    package init(endpoint: Endpoint, observer: Observer, observerQueue: ObserverQueue) {
        self.endpoint = endpoint
        self.observer = observer
        self.observerQueue = observerQueue
    }

    deinit {
        end()
    }

    /// The next notification, waiting for one; nil once the sequence ended (its task was cancelled).
    package func next() async -> SendableNotification? {
        await withTaskCancellationHandler {
            await observerQueue.next()
        } onCancel: {
            end()
        }
    }

    /// Removes the observer. Ending twice is not an error.
    private func end() {
        let observer = self.observer
        endpoint.remove { $0 === observer }
        // Also when a center going away removed it already.
        observerQueue.end()
    }
}
