import Foundation

/// A secure-coding class of the user's own, known to the tests and to the peer processes they start.
public final class TestPoint: NSObject, NSSecureCoding {
    public static let supportsSecureCoding = true
    public let x: Int
    public let y: Int

    public init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }

    public init?(coder: NSCoder) {
        x = coder.decodeInteger(forKey: "x")
        y = coder.decodeInteger(forKey: "y")
    }

    public func encode(with coder: NSCoder) {
        coder.encode(x, forKey: "x")
        coder.encode(y, forKey: "y")
    }
}
