extension Array where Element == UInt8 {
    /// `withUnsafeBytes`, for a body that throws ``WormholeError``.
    package func withRawBytes<R>(_ body: (UnsafeRawBufferPointer) throws(WormholeError) -> R) throws(WormholeError) -> R {
        try withUnsafeBytes { raw in Result { () throws(WormholeError) -> R in try body(raw) } }.get()
    }
}
