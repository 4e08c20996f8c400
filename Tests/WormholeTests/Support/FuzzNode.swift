// Also compiled into the fuzz target (Benchmarks/Fuzz/run-fuzzer.sh), whose module has this target's name, so
// that the class names in the seed corpus are the same for it and for the tests that replay the corpus.
import Foundation

/// A secure-coding class of the user's own for the fuzz target: it reads every kind of field through the
/// coder, nests itself alone and in collections, and refuses what it does not expect.
final class FuzzNode: NSObject, NSSecureCoding {
    static let supportsSecureCoding = true

    /// What the fuzz target's observer allows: every class the codec reads, and this one.
    static let allowedClasses: [AnyClass] = [
        NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self, NSDate.self, NSSet.self,
        NSNull.self, NSURL.self, NSUUID.self, FuzzNode.self,
    ]

    var name = ""
    var value = 0
    var real = 0.0
    var flag = false
    var blob: [UInt8] = []
    var children: [FuzzNode] = []
    var map: [String: FuzzNode] = [:]
    var peer: FuzzNode?
    var extra: Any?

    override init() {}

    init?(coder: NSCoder) {
        guard coder.containsValue(forKey: "name"),
            let name = coder.decodeObject(of: NSString.self, forKey: "name") as String?
        else { return nil }
        self.name = name
        value = coder.decodeInteger(forKey: "value")
        real = coder.decodeDouble(forKey: "real")
        flag = coder.decodeBool(forKey: "flag")
        _ = coder.decodeInt32(forKey: "value")
        _ = coder.decodeFloat(forKey: "real")
        blob = coder.withDecodedUnsafeBytes(forKey: "blob") { $0.map(Array.init) } ?? []
        children = coder.decodeObject(of: [NSArray.self, FuzzNode.self], forKey: "children") as? [FuzzNode] ?? []
        map = coder.decodeObject(of: [NSDictionary.self, NSString.self, FuzzNode.self], forKey: "map") as? [String: FuzzNode] ?? [:]
        peer = coder.decodeObject(of: FuzzNode.self, forKey: "peer")
        extra = coder.decodeObject(forKey: "extra")
    }

    func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(value, forKey: "value")
        coder.encode(real, forKey: "real")
        coder.encode(flag, forKey: "flag")
        coder.encodeBytes(blob, length: blob.count, forKey: "blob")
        coder.encode(children, forKey: "children")
        coder.encode(map, forKey: "map")
        coder.encode(peer, forKey: "peer")
        coder.encode(extra, forKey: "extra")
    }

    /// A small tree of nodes sharing one peer, holding a set, a URL and a UUID beside them.
    static func sample(_ seed: Int) -> FuzzNode {
        let shared = FuzzNode()
        shared.name = "shared"
        let root = FuzzNode()
        root.name = "root \(seed)"
        root.value = seed
        root.real = Double(seed) / 3
        root.flag = seed % 2 == 0
        root.blob = [1, 2, UInt8(truncatingIfNeeded: seed)]
        root.children = (0..<(seed % 3 + 1)).map { index in
            let child = FuzzNode()
            child.name = "child \(index)"
            child.peer = shared
            return child
        }
        root.map = ["s": shared]
        root.peer = shared
        root.extra = [
            "set": Set<AnyHashable>(["a", seed]), "url": URL(string: "https://example.org/\(seed)") as Any, "id": UUID(),
            "null": NSNull(),
        ] as [String: Any]
        return root
    }
}
