import Foundation
import Wormhole

/// The notifications taken from this group and not yet acknowledged by the other device: one file each in
/// `relay/outbox/` in the container, named by its link sequence, written whole before the notification is
/// taken, removed once acknowledged. They survive the relay's exit and are sent again on its next run.
struct Outbox {
    static let capacity = Limits.relayOutboxCapacity
    static let maximumItemSize = Limits.relayOutboxItemSize

    let folder: URL
    /// What the folder holds, by link sequence.
    private(set) var items: [UInt64: RelayItem] = [:]

    init(folder: URL, log: (String) -> Void) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let file = StateFile(url: folder.appendingPathComponent(name), limit: Self.maximumItemSize)
            guard let link = UInt64(name, radix: 16), name.count == 16 else {
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
    }

    var count: Int { items.count }
    var highest: UInt64 { items.keys.max() ?? 0 }

    /// The items after `link`, in order.
    func items(after link: UInt64) -> [RelayItem] {
        items.values.filter { $0.link > link }.sorted { $0.link < $1.link }
    }

    var ordered: [RelayItem] { items.values.sorted { $0.link < $1.link } }

    mutating func add(_ item: RelayItem) throws {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        try StateFile(url: url(item.link), limit: Self.maximumItemSize).write(try encoder.encode(item))
        items[item.link] = item
    }

    /// Replaces an item the link cannot carry by a skip, so that the other side moves past it.
    mutating func skip(_ link: UInt64) throws {
        try add(RelayItem(link: link, poster: 0, sequence: 0, name: "", skipped: true))
    }

    /// Forgets what the other device acknowledged.
    mutating func acknowledge(upTo link: UInt64) {
        for done in items.keys where done <= link {
            StateFile(url: url(done), limit: Self.maximumItemSize).remove()
            items[done] = nil
        }
    }

    private func url(_ link: UInt64) -> URL {
        let hex = String(link, radix: 16)
        return folder.appendingPathComponent(String(repeating: "0", count: 16 - hex.count) + hex)
    }
}
