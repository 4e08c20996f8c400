import WormholeEngine

/// The userInfo codec exactly as a post and a receiving observer use it, for the package's benchmarks.
@_spi(Benchmarking)
public enum UserInfoArchive {
    /// The bytes a post carries for `userInfo`.
    public static func encode(_ userInfo: [AnyHashable: Any]) throws -> [UInt8] {
        try UserInfoCodec.encode(userInfo, maximumSize: Limits.maximumPayloadSize)
    }

    /// The userInfo an observer allowing `classes` receives from `bytes`.
    public static func decode(_ bytes: [UInt8], allowedClasses classes: [AnyClass]) throws -> [AnyHashable: Any] {
        try UserInfoCodec.decode(bytes, allowed: AllowedClasses.cached(classes))
    }
}
