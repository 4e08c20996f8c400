/// The command line after the command: `--key value` and `--key=value` options, `--flag`s, the short forms of a
/// few options (`-c DIR`, `-cDIR`), and at most as many positional arguments as the command takes (a name).
///
/// As `git` and `busctl` read theirs: an option's value is the next argument or what follows `=`; an option
/// followed by another option has no value, which is an error (write `--name=--odd` for a value that starts with
/// `--`); an empty value (`--name ""`), an option given twice, one the command does not take (with the nearest
/// one it does take, when one is close), and a stray argument are errors that name it. `--` ends the options:
/// what follows is positional, so `wormhole post -- -odd` posts `-odd`.
/// `-h` or `--help` anywhere before `--` asks for the command's help.
struct Options {
    /// The short forms, each of an option some commands take: a command that does not take the long one does not
    /// take its short one either.
    static let shortForms: [Character: String] = ["c": "container", "g": "group", "n": "count"]

    private var values: [String: String] = [:]
    private var flags: Set<String> = []
    /// The positional arguments, in order.
    private(set) var positional: [String] = []

    /// - Parameters:
    ///   - valued: The options that take a value, without their `--`.
    ///   - known: The flags, options without a value.
    ///   - positionals: How many positional arguments the command takes.
    init(_ arguments: some Sequence<String>, options valued: Set<String>, flags known: Set<String> = [],
         positionals: Int = 0) throws(UsageError) {
        var remaining = Array(arguments)[...]
        let options = remaining.prefix { $0 != "--" }
        if options.contains(where: { $0 == "-h" || $0 == "--help" }) { throw UsageError.help }
        var onlyPositional = false
        while let argument = remaining.popFirst() {
            if onlyPositional || !Self.isOption(argument) {
                if argument == "--" && !onlyPositional {
                    onlyPositional = true
                    continue
                }
                guard positional.count < positionals else { throw UsageError("unexpected argument '\(Self.shown(argument))'") }
                positional.append(argument)
                continue
            }
            let key: String
            let inline: String?
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                key = String(body.prefix { $0 != "=" })
                inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            } else {
                // A long option with one dash (-container, as find writes them) is not -c with "ontainer".
                let word = String(argument.dropFirst().prefix { $0 != "=" })
                if word.count > 1, valued.contains(word) || known.contains(word) {
                    throw UsageError("unknown option -\(word); did you mean --\(word)?")
                }
                // -c DIR or -cDIR, as getopt reads a short option that takes a value.
                let letter = argument.dropFirst().first ?? "-"
                guard let long = Self.shortForms[letter], valued.contains(long) else {
                    throw UsageError("unknown option \(Self.shown(String(argument.prefix(2))))")
                }
                key = long
                let attached = String(argument.dropFirst(2))
                inline = attached.isEmpty ? nil : attached
            }
            if known.contains(key) {
                guard inline == nil else { throw UsageError("--\(key) takes no value") }
                guard flags.insert(key).inserted else { throw UsageError("--\(key) is given twice") }
                continue
            }
            guard valued.contains(key) else {
                let hint = Suggestion.nearest(to: key, among: valued.union(known)).map { "; did you mean --\($0)?" } ?? ""
                throw UsageError("unknown option --\(Self.shown(key))\(hint)")
            }
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

    /// Whether `argument` is an option: `--key…`, or `-x…` (a short form, or a mistake). `-` alone (standard
    /// input, where a value is read from a file) and `--` are not.
    private static func isOption(_ argument: String) -> Bool {
        argument.hasPrefix("-") && argument.count > 1 && argument != "--"
    }

    /// An argument as an error quotes it: at most 40 characters.
    private static func shown(_ text: String) -> String {
        text.count > 40 ? text.prefix(40) + "…" : text
    }

    subscript(key: String) -> String? { values[key] }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The name a command works on: its positional argument or `--name`, which may both be given only alike.
    /// - Parameter required: When true, a command line with neither is an error that says so.
    /// - Throws: A ``UsageError`` when both are given and differ, the name given alone is empty, or none is given
    ///   and one is required.
    func name(for command: String, required: Bool) throws(UsageError) -> String? {
        if positional.first?.isEmpty == true { throw UsageError("the name is empty: give it a value") }
        switch (positional.first, values["name"]) {
        case (let given?, let option?) where given != option:
            throw UsageError("the name is given twice, '\(Self.shown(given))' and --name '\(Self.shown(option))': give it once")
        case (let given?, _): return given
        case (nil, let option?): return option
        case (nil, nil):
            guard !required else { throw UsageError("\(command) needs --name NAME, or the name alone: wormhole \(command) NAME") }
            return nil
        }
    }

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
