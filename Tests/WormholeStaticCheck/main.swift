// Checks that a statically linked program (swift build --static-swift-stdlib), where Foundation's keyed
// archiver writes no bytes at all, still archives and reads back classes of the user's own, and carries one
// through a center. Run by .ci/run after the tests; exits 1, saying what failed, on any difference.
import Foundation
import Wormhole
import WormholeTestSupport

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("wormhole-static-check: \(message)\n".utf8))
    exit(1)
}

let classes: [AnyClass] = [NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, TestPoint.self]
let userInfo: [AnyHashable: Any] = ["point": TestPoint(x: 3, y: -4), "points": [TestPoint(x: 1, y: 2)], "n": 7]

do {
    let archive = try SecureArchive.archivedData(withRootObject: userInfo)
    guard !archive.isEmpty else { fail("the archive is empty") }
    guard let decoded = try SecureArchive.unarchivedObject(ofClasses: classes, from: archive) as? [AnyHashable: Any],
        let point = decoded["point"] as? TestPoint, point.x == 3, point.y == -4,
        let points = decoded["points"] as? [TestPoint], points.count == 1, points[0].x == 1, points[0].y == 2,
        decoded["n"] as? Int == 7
    else { fail("the archive did not read back equal") }

    // The same through a center, to an observer in this process.
    var template = Array((NSTemporaryDirectory() + "/wormhole-static-XXXXXX").utf8CString)
    guard let folder = mkdtemp(&template).map({ String(cString: $0) }) else { fail("cannot create a folder") }
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let center = try GroupNotificationCenter(containerURL: URL(fileURLWithPath: folder + "/container"))
    let arrived = DispatchSemaphore(value: 0)
    center.addObserver(forName: .init("static"), object: nil, allowedClasses: classes, queue: nil) { note in
        if let point = note.userInfo?["point"] as? TestPoint, point.x == 3, point.y == -4 { arrived.signal() }
    }
    try center.postReporting(name: .init("static"), object: nil, userInfo: userInfo)
    guard arrived.wait(timeout: .now() + 20) == .success else { fail("the notification did not arrive with its point") }
    print("wormhole-static-check: a class of the user's own round-trips, \(archive.count) bytes")
} catch {
    fail("\(error)")
}
