import Foundation
import WormholeTestSupport

/// A secure-coding class of the user's own that uses every kind of field a coder carries: objects of Foundation
/// classes, nested objects of its own class and of another, collections of them, and numbers, flags and bytes.
final class TestShape: NSObject, NSSecureCoding {
    static let supportsSecureCoding = true

    var name = ""
    var corners: [TestPoint] = []
    var children: [TestShape] = []
    var labels: [String: TestPoint] = [:]
    var origin: TestPoint?
    var link: URL?
    var id: UUID?
    var tags: Set<String> = []
    var weight = 0.0
    var scale: Float = 0
    var visible = false
    var layer: Int32 = 0
    var serial: Int64 = 0
    var blob: [UInt8] = []

    override init() {}

    init?(coder: NSCoder) {
        guard let name = coder.decodeObject(of: NSString.self, forKey: "name") as String? else { return nil }
        self.name = name
        corners = coder.decodeObject(of: [NSArray.self, TestPoint.self], forKey: "corners") as? [TestPoint] ?? []
        children = coder.decodeObject(of: [NSArray.self, TestShape.self], forKey: "children") as? [TestShape] ?? []
        labels = coder.decodeObject(of: [NSDictionary.self, NSString.self, TestPoint.self], forKey: "labels")
            as? [String: TestPoint] ?? [:]
        origin = coder.decodeObject(of: TestPoint.self, forKey: "origin")
        link = coder.decodeObject(of: NSURL.self, forKey: "link") as URL?
        id = coder.decodeObject(of: NSUUID.self, forKey: "id") as UUID?
        tags = coder.decodeObject(of: [NSSet.self, NSString.self], forKey: "tags") as? Set<String> ?? []
        weight = coder.decodeDouble(forKey: "weight")
        scale = coder.decodeFloat(forKey: "scale")
        visible = coder.decodeBool(forKey: "visible")
        layer = coder.decodeInt32(forKey: "layer")
        serial = coder.decodeInt64(forKey: "serial")
        blob = coder.withDecodedUnsafeBytes(forKey: "blob") { $0.map(Array.init) } ?? []
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(corners, forKey: "corners")
        coder.encode(children, forKey: "children")
        coder.encode(labels, forKey: "labels")
        coder.encode(origin, forKey: "origin")
        coder.encode(link, forKey: "link")
        coder.encode(id, forKey: "id")
        coder.encode(tags, forKey: "tags")
        coder.encode(weight, forKey: "weight")
        coder.encode(scale, forKey: "scale")
        coder.encode(visible, forKey: "visible")
        coder.encode(layer, forKey: "layer")
        coder.encode(serial, forKey: "serial")
        coder.encodeBytes(blob, length: blob.count, forKey: "blob")
    }

    /// Field by field, nested shapes and points included.
    func same(as other: TestShape) -> Bool {
        name == other.name && corners.count == other.corners.count
            && zip(corners, other.corners).allSatisfy { $0.x == $1.x && $0.y == $1.y }
            && children.count == other.children.count && zip(children, other.children).allSatisfy { $0.same(as: $1) }
            && labels.keys.sorted() == other.labels.keys.sorted()
            && labels.allSatisfy { key, point in other.labels[key].map { $0.x == point.x && $0.y == point.y } ?? false }
            && origin?.x == other.origin?.x && origin?.y == other.origin?.y
            && link?.absoluteString == other.link?.absoluteString && id == other.id && tags == other.tags
            && weight == other.weight && scale == other.scale && visible == other.visible && layer == other.layer
            && serial == other.serial && blob == other.blob
    }

    /// A shape with every field set, nesting `depth` levels of children.
    static func sample(_ seed: Int, depth: Int = 2) -> TestShape {
        let shape = TestShape()
        shape.name = "shape \(seed) ✓"
        shape.corners = (0..<(seed % 4)).map { TestPoint(x: $0 + seed, y: -$0) }
        shape.children = depth > 0 ? (0..<2).map { sample(seed * 3 + $0, depth: depth - 1) } : []
        shape.labels = ["a": TestPoint(x: seed, y: 1), "b": TestPoint(x: 2, y: seed)]
        shape.origin = seed % 2 == 0 ? TestPoint(x: seed, y: seed) : nil
        shape.link = URL(string: "https://example.org/\(seed)?q=\(seed)")
        shape.id = UUID()
        shape.tags = ["t\(seed)", "shape"]
        shape.weight = Double(seed) / 7
        shape.scale = Float(seed) / 4
        shape.visible = seed % 3 == 0
        shape.layer = Int32(-seed)
        shape.serial = Int64(seed) << 40
        shape.blob = (0..<(seed % 9)).map { UInt8(truncatingIfNeeded: $0 * seed) }
        return shape
    }
}
