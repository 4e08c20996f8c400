import Foundation

/// A fresh private folder for one test, removed when the test is done with it.
final class TemporaryContainer: Sendable {
    let path: String
    var url: URL { URL(fileURLWithPath: path) }

    init(_ label: String = "test") {
        let folder = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((folder + "wormhole-\(label)-XXXXXX").utf8CString)
        let made = mkdtemp(&template)
        path = made.map { String(cString: $0) } ?? folder + "wormhole-\(label)-\(UUID().uuidString)"
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
