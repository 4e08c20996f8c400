/// Text that another process chose (notification names and objects, class names, registry entries), made safe
/// for a log line or a terminal.
public enum Escaping {
    /// `text` with every character that could move the cursor, rewrite a line, change the terminal's state or
    /// reorder what a reader sees written as a JSON-style escape: `\n`, `\r`, `\t`, and `\uXXXX` for the other
    /// C0 and C1 controls, DEL, the line and paragraph separators and the bidirectional controls.
    ///
    /// Printable text, JSON included, comes back unchanged; an escaped JSON line is still the same JSON.
    public static func forDisplay(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            }
        }
        return result
    }

    /// Whether `scalar` is one of the characters ``forDisplay(_:)`` escapes. The bidirectional controls are
    /// Unicode's own `Bidi_Control` property, so a control a later Unicode version adds is escaped too.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20..<0x7F: false
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029: true
        default: scalar.properties.isBidiControl
        }
    }
}
