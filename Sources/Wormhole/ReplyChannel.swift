import Foundation
import Synchronization
import WormholeEngine

/// Where one center's replies come back: a reply name of its own (`wormhole.reply.<random>`), observed by its
/// process's ephemeral listener, and the requests waiting on it. Set up by the center's first request.
///
/// A durable center's replies go to an ephemeral center of the same process, never to its durable identity:
/// a reply spooled for the identity would find no request waiting in its next run.
final class ReplyChannel: Sendable {
    let pending = PendingRequests()
    private let setup = Mutex<Setup?>(nil)

    private struct Setup: Sendable {
        let name: String
        /// The ephemeral center that observes the reply name for a durable one; nil for an ephemeral center.
        let receiver: GroupNotificationCenter?
    }

    /// The name replies to `center`'s requests come under, observed from the first call on.
    /// - Throws: What opening an ephemeral center on the container throws, for a durable `center`.
    func replyName(for center: GroupNotificationCenter) throws -> String {
        try setup.withLock { (setup: inout Setup?) throws -> String in
            if let setup { return setup.name }
            let name = ReservedNames.replyPrefix + FileName.hex(.random(in: 1...UInt64.max)) + FileName.hex(.random(in: 1...UInt64.max))
            let receiver = center.endpoint.identity.isDurable
                ? try GroupNotificationCenter(
                    containerURL: center.containerURL, clientIdentifier: nil, configuration: GroupNotificationCenter.Configuration(center.endpoint.settings))
                : nil
            let pending = self.pending
            let counters = center.endpoint.counters
            _ = (receiver ?? center).addObserver(
                forName: Notification.Name(name), object: nil, allowedClasses: AllowedClasses.values, queue: nil
            ) { reply in
                let id = reply.object as? String ?? ""
                // A bridge to other hosts that found no responder there: the request fails once every listener
                // it reached has said so. One that comes after a responder of this host answered is no reply
                // lost: not counted, not logged.
                guard reply.userInfo?[RequestEnvelope.noResponderKey] == nil else {
                    _ = pending.decline(id)
                    return
                }
                if !pending.finish(id, with: .success(SendableNotification(reply))) {
                    counters.count { $0.repliesDropped += 1 }
                    Log.warning("reply \(id) dropped: no request of this process waits for it (answered already, timed out, cancelled, or never made)")
                }
            }
            setup = Setup(name: name, receiver: receiver)
            return name
        }
    }
}
