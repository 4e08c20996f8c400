import Foundation
import Wormhole

/// The notifications taken from this group and not yet acknowledged by the other device: one file each in
/// `relay/outbox/` in the container, named by its link sequence, written whole before the notification is
/// taken, removed once acknowledged. They survive the relay's exit and are sent again on its next run.
struct Outbox {
    static let capacity = Limits.relayOutboxCapacity
    static let maximumItemSize = Limits.relayOutboxItemSize

    let folder: URL
    /// What the folder holds, in order of link sequence.
    private(set) var ordered: [RelayItem] = []

    init(folder: URL, log: (String) -> Void) throws {
        self.folder = folder
        var items: [UInt64: RelayItem] = [:]
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let file = StateFile(url: folder.appendingPathComponent(name), limit: Self.maximumItemSize)
            guard let link = UInt64(name, radix: 16), name.count == 16, link > 0, link < Limits.relayHighestLink else {
                // A temporary file of a write that was cut short, or something planted.
                file.remove()
                continue
            }
            do {
                guard let data = try file.read() else { continue }
                let item = try PropertyListDecoder().decode(RelayItem.self, from: data)
                guard item.link == link else { throw RelayLinkError(.failed, "it holds item \(item.link)") }
                items[link] = item
            } catch {
                log("relay outbox item \(name) is damaged (\(error)); dropping it")
                file.remove()
                // The other side moves past it.
                items[link] = RelayItem(link: link, poster: 0, sequence: 0, name: "", skipped: true)
            }
        }
        ordered = items.values.sorted { $0.link < $1.link }
    }

    var count: Int { ordered.count }
    var highest: UInt64 { ordered.last?.link ?? 0 }
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

    mutating func add(_ item: RelayItem) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        try StateFile(url: url(item.link), limit: Self.maximumItemSize).write(try encoder.encode(item))
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
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            try StateFile(url: url(item.link), limit: Self.maximumItemSize).write(try encoder.encode(item))
            ordered[index] = item
            StateFile(url: url(old), limit: Self.maximumItemSize).remove()
        }
    }

    /// Forgets what the other device acknowledged.
    mutating func acknowledge(upTo link: UInt64) {
        let end = index(after: link)
        for done in ordered[..<end] { StateFile(url: url(done.link), limit: Self.maximumItemSize).remove() }
        ordered.removeFirst(end)
    }

    private func url(_ link: UInt64) -> URL {
        let hex = String(link, radix: 16)
        return folder.appendingPathComponent(String(repeating: "0", count: 16 - hex.count) + hex)
    }
}
