/// The command line after the subcommand: `--key value` options and `--flag`s.
struct Options {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    init(_ arguments: some Sequence<String>, flags known: Set<String>) throws(UsageError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard argument.hasPrefix("--") else { throw UsageError("unexpected argument \(argument)") }
            let key = String(argument.dropFirst(2))
            if known.contains(key) {
                flags.insert(key)
            } else {
                guard let value = iterator.next() else { throw UsageError("\(argument) needs a value") }
                values[key] = value
            }
        }
    }

    subscript(key: String) -> String? { values[key] }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func integer(_ key: String) throws(UsageError) -> Int? {
        guard let text = values[key] else { return nil }
        guard let value = Int(text), value >= 0 else { throw UsageError("--\(key) takes a whole number, not \(text)") }
        return value
    }

    /// Rejects any option not in `allowed`.
    func check(allowed: Set<String>) throws(UsageError) {
        if let unknown = values.keys.first(where: { !allowed.contains($0) }) {
            throw UsageError("unknown option --\(unknown)")
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
