// The chaos harness: posters and receivers on one container, while receivers are stopped and killed, posters
// are killed mid-post, and observers come and go. It counts what was lost, duplicated, reordered or corrupted.
//
//     swift run -c release wormhole-chaos [--posters 4] [--receivers 4] [--notifications 200000] [--seconds 60]
//                                         [--seed 1] [--rate N]      (N: each poster's notifications a second)
//                                         [--transport seqpacket|datagram]
//
// `--transport` sets WORMHOLE_TRANSPORT for every poster and receiver the harness starts, so that all of them
// listen on that kind of socket; by default they use this process's default transport (WORMHOLE_TRANSPORT if
// set, else the platform's). The summary line ends with the transport the run used.
//
// `--forget-every N` makes receivers leave every Nth notification out of their reports: the harness must then
// fail, which is how its own test checks that it counts.
import Foundation
import Synchronization
import Wormhole

func option(_ name: String, _ fallback: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else { return fallback }
    return Int(arguments[index + 1]) ?? fallback
}

func text(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--" + name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// The `--container` a poster or receiver was started with; the process ends when it is missing or empty, which
/// would make the current folder the container.
func container() -> String {
    guard let container = text("container"), !container.isEmpty else {
        FileHandle.standardError.write(Data("chaos: \(CommandLine.arguments.dropFirst().first ?? "") needs --container DIR\n".utf8))
        exit(2)
    }
    return container
}

switch CommandLine.arguments.dropFirst().first {
case "poster":
    try Roles.poster(
        container: container(), id: option("id", 0), first: option("first", 0), end: option("end", 0),
        rate: option("rate", 0))
case "receiver":
    try Roles.receiver(container: container(), forgetEvery: option("forget-every", 0))
default:
    var transport = GroupNotificationCenter.Transport.processDefault
    if let name = text("transport") ?? (CommandLine.arguments.last == "--transport" ? "" : nil) {
        guard let named = GroupNotificationCenter.Transport(rawValue: name) else {
            let known = GroupNotificationCenter.Transport.allCases.map(\.rawValue).joined(separator: " or ")
            FileHandle.standardError.write(Data("chaos: --transport takes \(known), not '\(name)'\n".utf8))
            exit(2)
        }
        transport = named
    }
    let harness = Harness(
        posters: option("posters", 4), receivers: option("receivers", 4), notifications: option("notifications", 200_000),
        seconds: option("seconds", 60), seed: UInt64(option("seed", 1)), forgetEvery: option("forget-every", 0),
        rate: option("rate", 0), transport: transport)
    exit(harness.run())
}
