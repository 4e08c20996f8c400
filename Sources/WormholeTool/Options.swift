/// The command line after the command: `--key value` and `--key=value` options, and `--flag`s.
///
/// As `git` and `busctl` read theirs: an option's value is the next argument or what follows `=`; an option
/// followed by another option has no value, which is an error (write `--name=--odd` for a value that starts with
/// `--`); an empty value (`--name ""`), an option given twice, one the command does not take, and a stray argument
/// are errors that name it.
/// `-h` or `--help` anywhere asks for the command's help.
struct Options {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    init(_ arguments: some Sequence<String>, options valued: Set<String>, flags known: Set<String> = []) throws(UsageError) {
        var remaining = Array(arguments)[...]
        if remaining.contains(where: { $0 == "-h" || $0 == "--help" }) { throw UsageError.help }
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--"), argument.count > 2 else { throw UsageError("unexpected argument '\(argument)'") }
            let body = argument.dropFirst(2)
            let key = String(body.prefix { $0 != "=" })
            let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            if known.contains(key) {
                guard inline == nil else { throw UsageError("--\(key) takes no value") }
                guard flags.insert(key).inserted else { throw UsageError("--\(key) is given twice") }
                continue
            }
            guard valued.contains(key) else { throw UsageError("unknown option --\(key)") }
            guard values[key] == nil else { throw UsageError("--\(key) is given twice") }
            let value: String
            if let inline {
                value = inline
            } else if let next = remaining.first, !(next.hasPrefix("--") && next.count > 2) {
                value = next
                remaining = remaining.dropFirst()
            } else {
                throw UsageError("--\(key) needs a value")
            }
            guard !value.isEmpty else { throw UsageError("--\(key) is empty: give it a value") }
            values[key] = value
        }
    }

    subscript(key: String) -> String? { values[key] }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func integer(_ key: String) throws(UsageError) -> Int? {
        guard let text = values[key] else { return nil }
        guard let value = Int(text), value >= 0 else { throw UsageError("--\(key) takes a whole number, not '\(text)'") }
        return value
    }

    /// A number of seconds (`--timeout 2.5`, `--timeout 1e-3`) as the library waits it: in whole nanoseconds,
    /// rounded to the nearest. Every duration option of the tool is read here.
    /// - Throws: A ``UsageError`` that says why, for text that is not a number, or not finite, or not more than
    ///   zero, or shorter than a nanosecond (the shortest wait the library has), or more than `maximum` seconds.
    func duration(_ key: String, atMost maximum: Int) throws(UsageError) -> Duration? {
        guard let text = values[key] else { return nil }
        let shown = text.count > 40 ? text.prefix(40) + "…" : text
        guard let seconds = Double(text) else { throw UsageError("--\(key) takes a number of seconds, not '\(shown)'") }
        guard seconds.isFinite else { throw UsageError("--\(key) takes a finite number of seconds, not '\(shown)'") }
        guard seconds > 0 else { throw UsageError("--\(key) must be more than 0 seconds, not '\(shown)'") }
        guard seconds >= 1e-9 else {
            throw UsageError("--\(key) \(shown) is shorter than a nanosecond, the shortest wait there is: give at least 1e-9")
        }
        guard seconds <= Double(maximum) else {
            throw UsageError("--\(key) must be at most \(maximum) seconds, not '\(shown)'")
        }
        return .nanoseconds(max(1, Int64((seconds * 1e9).rounded())))
    }
}

/// A mistake in the command line: exit status 2, one line naming what was wrong.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// `-h` or `--help`: the command's help, exit status 0.
    static let help = UsageError("")
    var isHelp: Bool { description.isEmpty }
}

/// A failure of the operation the command line asked for, found by the tool itself: exit status 1, one line.
struct ToolFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
