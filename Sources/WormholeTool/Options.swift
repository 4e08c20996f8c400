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
