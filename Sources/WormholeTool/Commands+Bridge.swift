import Dispatch
import Foundation
import Synchronization
import Wormhole
import WormholeBridge
import WormholeRelay

extension Commands {
    /// Runs a bridge between the container and a NATS server until SIGTERM or SIGINT, printing its status as
    /// one JSON line each time it changes.
    static func bridge(_ arguments: ArraySlice<String>) throws -> Never {
        let options = try Options(
            arguments, options: containerOptions.union(["server", "route", "retained", "value", "request", "subject-prefix", "replicas"]),
            flags: ["create"], positionals: 64)
        guard let serverText = options["server"] else { throw UsageError("give the server: --server nats://HOST:PORT") }
        guard let url = URL(string: serverText) else { throw UsageError("--server takes a nats:// URL, not '\(serverText)'") }
        let server: NATSServerAddress
        do {
            server = try NATSServerAddress(url: url)
        } catch {
            throw UsageError("--server: \(error)")
        }
        let names = options.positional + (options["route"].map { [$0] } ?? [])
        // NAME* carries every name that starts with NAME.
        var routes = names.map { name in
            name.hasSuffix("*") ? RelayRoute.notifications(prefixed: String(name.dropLast())) : .notifications(named: name)
        }
        if let name = options["retained"] { routes.append(.retained(named: name)) }
        if let name = options["value"] { routes.append(.value(named: name)) }
        if let name = options["request"] { routes.append(.requests(named: name)) }
        guard !routes.isEmpty else {
            throw UsageError(
                "give at least one name to carry (NAME, or PREFIX* for every name it starts), --retained NAME, --value NAME or --request NAME")
        }
        var bridgeOptions = WormholeBridge.Options()
        if let prefix = options["subject-prefix"] { bridgeOptions.subjectPrefix = prefix }
        if let replicas = try options.integer("replicas") {
            guard [1, 3, 5].contains(replicas) else { throw UsageError("--replicas takes 1, 3 or 5, not \(replicas)") }
            bridgeOptions.replicas = replicas
        }
        let containerURL = try center(options, command: "bridge").containerURL
        let bridge: WormholeBridge
        do {
            bridge = try WormholeBridge(containerURL: containerURL, server: server, routes: routes, options: bridgeOptions)
        } catch let error as BridgeError {
            throw UsageError("\(error)")
        }
        signal(SIGPIPE, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        bridge.start()
        Output.error("wormhole: bridging \(containerURL.path) with \(server) (pid \(getpid()))")
        var last: BridgeStatus?
        while stop.wait(timeout: .now() + .milliseconds(200)) == .timedOut {
            let status = bridge.status
            guard status != last else { continue }
            last = status
            guard Output.line(JSONValue.object(statusFields(status)).text) else { break }
        }
        bridge.close()
        withExtendedLifetime(signals) {}
        exit(0)
    }

    private static func statusFields(_ status: BridgeStatus) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            "connection": .string(status.connection.description), "waiting": .integer(Int64(status.waiting)),
            "sent": .integer(Int64(status.sent)), "posted": .integer(Int64(status.posted)),
            "duplicates": .integer(Int64(status.duplicatesDropped)), "dropped": .integer(Int64(status.dropped)),
            "reconnects": .integer(Int64(status.reconnects)), "gapsFilled": .integer(Int64(status.gapsFilled)),
            "values": .integer(Int64(status.valuesApplied)), "requestsSent": .integer(Int64(status.requestsSent)),
            "requestsReceived": .integer(Int64(status.requestsReceived)),
        ]
        if let error = status.lastError { fields["lastError"] = .string(error) }
        return fields
    }
}
