import Foundation

/// The coder handed to `encode(with:)` of an `NSSecureCoding` class of the user's own: it collects the fields
/// the object writes, which ``KeyedArchiveEncoder`` then archives as Foundation's keyed archiver does.
///
/// Objects written are archived after `encode(with:)` returns, not during it, so no coder call re-enters the
/// archive being written. A method this coder does not serve records an error (see ``StrictCoder``), and the
/// value is refused with it.
final class KeyedObjectEncoder: StrictCoder {
    /// The fields in the order written; a key written twice keeps its last value, at its first place.
    private(set) var fields: [(key: String, value: CodedField)] = []
    private var positions: [String: Int] = [:]
    /// Whether the object's `encode(with:)` is still running; calls after it returns are refused.
    private var open = true

    /// Ends the object: later calls, from a coder the class kept, record an error instead of a field.
    func close() { open = false }

    private func put(_ key: String, _ value: CodedField) {
        guard open else { return fail("encode(_:forKey:) called after encode(with:) returned") }
        if let position = positions[key] {
            fields[position].value = value
        } else {
            positions[key] = fields.count
            fields.append((key, value))
        }
    }

    override func encode(_ objv: Any?, forKey key: String) { put(key, .object(objv)) }
    override func encodeConditionalObject(_ objv: Any?, forKey key: String) { put(key, .conditionalObject(objv)) }
    override func encode(_ boolv: Bool, forKey key: String) { put(key, .bool(boolv)) }
    override func encode(_ intv: Int32, forKey key: String) { put(key, .integer(Int64(intv))) }
    override func encode(_ intv: Int64, forKey key: String) { put(key, .integer(intv)) }
    override func encode(_ intv: Int, forKey key: String) { put(key, .integer(Int64(intv))) }
    override func encode(_ realv: Float, forKey key: String) { put(key, .real(Double(realv))) }
    override func encode(_ realv: Double, forKey key: String) { put(key, .real(realv)) }
    override func encodeBytes(_ bytesp: UnsafePointer<UInt8>?, length lenv: Int, forKey key: String) {
        guard lenv >= 0 else { return fail("encodeBytes(_:length:forKey:) with a negative length") }
        guard let bytesp else { return put(key, .bytes([])) }
        put(key, .bytes(Array(UnsafeBufferPointer(start: bytesp, count: lenv))))
    }
}
