// A relay process for the tests: runs a WormholeRelay between a container and one side of a FileLink (the
// stand-in for WatchConnectivity), until killed. Prints {"ready": pid} once started, then its status as one JSON
// line whenever what it waits, sent or posted changes.
//
//   wormhole-relay-peer --container DIR --link DIR --side phone|watch --route KIND:NAME[:DIRECTION] ...
// KIND is notifications, prefix, retained, value or requests; DIRECTION is both (the default), outgoing or incoming.
import Foundation
import Wormhole
import WormholeRelay
import WormholeTestSupport

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func emit(_ object: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("wormhole-relay-peer: \(message)\n".utf8))
    exit(2)
}

guard let container = option("container"), let linkPath = option("link"), let sideName = option("side"),
    let side = FileLink.Side(rawValue: sideName)
else { fail("usage: wormhole-relay-peer --container DIR --link DIR --side phone|watch --route KIND:NAME[:DIRECTION] ...") }

var routes: [RelayRoute] = []
let arguments = CommandLine.arguments
for (index, argument) in arguments.enumerated() where argument == "--route" && index + 1 < arguments.count {
    let parts = arguments[index + 1].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard parts.count >= 2, let direction = RelayRoute.Direction(rawValue: parts.count > 2 ? parts[2] : "both") else {
        fail("bad route \(arguments[index + 1])")
    }
    switch parts[0] {
    case "notifications": routes.append(.notifications(named: parts[1], direction))
    case "prefix": routes.append(.notifications(prefixed: parts[1], direction))
    case "retained": routes.append(.retained(named: parts[1], direction))
    case "value": routes.append(.value(named: parts[1], direction))
    case "requests": routes.append(.requests(named: parts[1], direction))
    default: fail("bad route kind \(parts[0])")
    }
}

let link = FileLink(directory: URL(fileURLWithPath: linkPath), side: side)
let relay: WormholeRelay
do {
    relay = try WormholeRelay(containerURL: URL(fileURLWithPath: container), routes: routes, link: link)
} catch {
    fail("\(error)")
}
relay.start()
emit(["ready": Int(ProcessInfo.processInfo.processIdentifier)])
let statuses = relay.statuses()
Task {
    var last: [Int] = []
    for await status in statuses {
        let errors = Dictionary(uniqueKeysWithValues: status.errors.map { ($0.key.rawValue, $0.value) })
        let now = [status.waiting, status.sent, status.posted, status.duplicatesDropped, status.valuesApplied, status.dropped]
            + RelayLinkError.Code.allCases.map { status.errors[$0] ?? 0 }
        guard now != last else { continue }
        last = now
        emit([
            "waiting": status.waiting, "sent": status.sent, "posted": status.posted, "duplicates": status.duplicatesDropped,
            "values": status.valuesApplied, "dropped": status.dropped, "reachable": status.link.isReachable,
            "errors": errors, "lastError": status.lastError?.description ?? NSNull(),
        ])
    }
}
dispatchMain()
