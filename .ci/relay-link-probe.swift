// A small iOS app's use of the relay, linked (never run) to prove that a client's references to WormholeRelay's
// public API and to WatchConnectivity resolve: a WatchSessionLink in each of its two ways, each RelayLink call,
// and a relay over it.
import Foundation
import WatchConnectivity
import Wormhole
import WormholeRelay

/// An app's own delegate, which stays the session's and hands the link what arrives.
final class AppSessionDelegate: NSObject, WCSessionDelegate {
    let link = WatchSessionLink(forwardedByDelegateOf: .default)

    func session(_ session: WCSession, activationDidCompleteWith state: WCSessionActivationState, error: (any Error)?) {
        link.handleActivation(error: error)
    }

    func sessionDidBecomeInactive(_ session: WCSession) {
        link.handleSessionStateChange()
    }

    func sessionDidDeactivate(_ session: WCSession) {
        session.activate()
        link.handleSessionStateChange()
    }

    func session(_ session: WCSession, didReceiveMessage message: [String: Any], replyHandler: @escaping ([String: Any]) -> Void) {
        guard !link.handle(message: message, replyHandler: replyHandler) else { return }
        replyHandler(["app": true])
    }

    func session(_ session: WCSession, didReceiveUserInfo userInfo: [String: Any]) {
        _ = link.handle(userInfo: userInfo)
    }

    func session(_ session: WCSession, didReceiveApplicationContext applicationContext: [String: Any]) {
        _ = link.handle(applicationContext: applicationContext)
    }

    func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?) {
        _ = link.handle(finished: userInfoTransfer, error: error)
    }
}

@main
struct RelayLinkProbe {
    static func main() throws {
        let appDelegate = AppSessionDelegate()
        let link = WatchSessionLink(session: .default, forwardingTo: appDelegate)
        link.activate { event in
            switch event {
            case .received(let payload, let channel): print("received", payload.count, "bytes over", channel)
            case .statusChanged(let status): print("status:", status)
            case .transferFinished(let payload, let error): print("transfer of", payload.count, "bytes:", error?.description ?? "done")
            case .failed(let error): print("failed:", error)
            }
        }
        print(link.status, RelayChannel.allCases.map { link.maximumPayloadSize(for: $0) })
        link.sendMessage(Data("probe".utf8)) { error in print("message:", error?.description ?? "arrived") }
        do throws(RelayLinkError) {
            try link.transfer(Data("probe".utf8))
            try link.updateContext(Data("probe".utf8))
        } catch {
            print(error.code, error.message)
        }
        print(link.outstandingTransfers.count, "outstanding")

        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("relay-link-probe")
        let relay = try WormholeRelay(
            containerURL: folder, routes: [.notifications(named: "probe"), .retained(named: "now"), .value(named: "n")],
            link: appDelegate.link)
        relay.start()
        print(relay.status)
        relay.close()
    }
}
