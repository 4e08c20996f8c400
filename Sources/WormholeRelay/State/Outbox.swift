import Foundation
import Wormhole

/// The notifications taken from this group and not yet acknowledged by the other device: one file each (0600) in
/// `relay/<client identifier>/outbox/` in the container, named by its link sequence (16 lowercase hex digits),
/// written whole before the notification is taken, removed once acknowledged. They survive the relay's exit and
/// are sent again on its next run.
///
/// The folder is reached through its descriptor (``ContainerFolder``), never through a link. What the relay did
/// not write there is never removed unless it is a regular file: an entry that is not (a folder, a link, a FIFO)
/// stays where it is, said in the log at each start; one under an item's name is moved aside
/// (`<name>.moved-<16 hex>`), and its item counts as damaged.
package struct Outbox {
    static let capacity = Limits.relayOutboxCapacity
    static let maximumItemSize = Limits.relayOutboxItemSize

    let folder: ContainerFolder
    /// What the folder holds, in order of link sequence.
    package private(set) var ordered: [RelayItem] = []
    /// The items found damaged at the start, each replaced by a skip.
    package private(set) var damaged = 0

    package init(folder: ContainerFolder, log: (String) -> Void) throws {
        self.folder = folder
        var items: [UInt64: RelayItem] = [:]
        var foreign: [String] = []
        for name in try folder.names() {
            guard let isRegularFile = folder.isRegularFile(name) else { continue }
            guard let link = Self.link(named: name) else {
                if isRegularFile {
                    // A temporary file of a write that was cut short, or a file planted.
                    try? folder.remove(name)
                } else {
                    foreign.append(name)
                }
                continue
            }
            do {
                guard isRegularFile else { throw RelayLinkError(.failed, "it is not a regular file") }
                guard let bytes = try folder.read(name, limit: Self.maximumItemSize) else { continue }
                let item = try StrictPropertyList.decode(RelayItem.self, from: bytes)
                guard item.link == link else { throw RelayLinkError(.failed, "it holds item \(item.link)") }
                items[link] = item
            } catch {
                log("relay outbox item \(name) is damaged (\(error)); a skip takes its place")
                damaged += 1
                // The other side moves past it. Written in its place, so that it still does after a restart.
                let skip = RelayItem(link: link, poster: 0, sequence: 0, name: "", skipped: true)
                do {
                    try write(skip, log: log)
                } catch {
                    log("relay outbox item \(name) not replaced (\(error)); its skip is sent from memory")
                }
                items[link] = skip
            }
        }
        if !foreign.isEmpty {
            let shown = foreign.sorted().prefix(3).joined(separator: ", ") + (foreign.count > 3 ? ", …" : "")
            log("relay outbox \(folder.path) holds \(foreign.count) entries that are not files of the relay's (\(shown)); left in place")
        }
        ordered = items.values.sorted { $0.link < $1.link }
    }

    package var count: Int { ordered.count }
    package var highest: UInt64 { ordered.last?.link ?? 0 }
    var lowest: UInt64? { ordered.first?.link }

    /// The items after `link`, in order.
    func items(after link: UInt64) -> ArraySlice<RelayItem> {
        ordered[index(after: link)...]
    }

    /// The index of the first item after `link`.
    private func index(after link: UInt64) -> Int {
        var low = 0, high = ordered.count
        while low < high {
            let middle = (low + high) / 2
            if ordered[middle].link <= link { low = middle + 1 } else { high = middle }
        }
        return low
    }

    package mutating func add(_ item: RelayItem) throws {
        try write(item, log: RelayLog.write)
        let at = index(after: item.link)
        if at > 0, ordered[at - 1].link == item.link {
            ordered[at - 1] = item
        } else {
            ordered.insert(item, at: at)
        }
    }

    /// Replaces an item the link cannot carry by a skip, so that the other side moves past it.
    mutating func skip(_ link: UInt64) throws {
        try add(RelayItem(link: link, poster: 0, sequence: 0, name: "", skipped: true))
    }

    /// Numbers the items 1, 2, 3… in their order: for a new device id, whose numbering the other side starts
    /// at 1. Each is written under its new number before its old file goes; a new number is never above the old.
    mutating func renumber() throws {
        for index in ordered.indices where ordered[index].link != UInt64(index + 1) {
            let old = ordered[index].link
            var item = ordered[index]
            item.link = UInt64(index + 1)
            try write(item, log: RelayLog.write)
            ordered[index] = item
            try? folder.remove(Self.name(old))
        }
    }

    /// Forgets what the other device acknowledged.
    package mutating func acknowledge(upTo link: UInt64) {
        let end = index(after: link)
        for done in ordered[..<end] { try? folder.remove(Self.name(done.link)) }
        ordered.removeFirst(end)
    }

    /// Writes `item` under its name; what is there and is not a regular file is moved aside, not removed.
    private func write(_ item: RelayItem, log: (String) -> Void) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let name = Self.name(item.link)
        if let moved = try folder.replace(name, with: [UInt8](try encoder.encode(item))) {
            log("relay outbox entry \(name) was not a regular file; moved aside to \(moved), where it stays")
        }
    }

    /// The file name of the item `link`: 16 lowercase hex digits.
    static func name(_ link: UInt64) -> String {
        let hex = String(link, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The link sequence a file name spells, when it is an item's name (``name(_:)``) within the range.
    static func link(named name: String) -> UInt64? {
        guard name.utf8.count == 16, name.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            let link = UInt64(name, radix: 16), link > 0, link < Limits.relayHighestLink
        else { return nil }
        return link
    }
}
