import Foundation

/// The container a command works in: `--container DIR` (`-c`) or `--group ID` (`-g`), or when the command line
/// names neither, `WORMHOLE_CONTAINER` (a folder) or `WORMHOLE_GROUP` (a group identifier) from the
/// environment, as `git` reads `GIT_DIR`. An option wins over the environment; a variable set to nothing counts
/// as not set.
struct ContainerChoice {
    enum Place {
        case group(String)
        case path(String)
    }

    static let containerVariable = "WORMHOLE_CONTAINER"
    static let groupVariable = "WORMHOLE_GROUP"

    let place: Place
    /// Where it came from, as an error names it: `--container`, `WORMHOLE_GROUP`.
    let source: String

    /// The folder path when the container was given as one.
    var path: String? {
        if case .path(let path) = place { return path }
        return nil
    }

    /// - Throws: A ``UsageError`` when the command line gives both options, or neither and the environment
    ///   sets both variables or neither.
    init(_ options: Options, environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) {
        switch (options["group"], options["container"]) {
        case (let group?, nil): (place, source) = (.group(group), "--group")
        case (nil, let path?): (place, source) = (.path(path), "--container")
        case (_?, _?): throw UsageError("give one of --group ID and --container DIR, not both")
        case (nil, nil):
            let path = environment[Self.containerVariable].flatMap { $0.isEmpty ? nil : $0 }
            let group = environment[Self.groupVariable].flatMap { $0.isEmpty ? nil : $0 }
            switch (group, path) {
            case (let group?, nil): (place, source) = (.group(group), Self.groupVariable)
            case (nil, let path?): (place, source) = (.path(path), Self.containerVariable)
            case (_?, _?):
                throw UsageError("\(Self.containerVariable) and \(Self.groupVariable) are both set: give --container DIR or --group ID, or unset one")
            case (nil, nil):
                throw UsageError("give --group ID or --container DIR (or set \(Self.groupVariable) or \(Self.containerVariable))")
            }
        }
    }

    /// Makes each folder of `path` that does not exist, from the top down, mode 0700, and says each on standard
    /// error as it is made (`wormhole: made /tmp/a (0700)`), so that a failure part way leaves nothing unsaid.
    /// A folder that exists is used as it is, whoever made it: the center checks the container itself.
    /// - Throws: A ``UsageError`` when a part of the path is a file; a ``ToolFailure`` when the system refuses
    ///   (no permission, a read-only file system).
    static func makeFolders(_ path: String) throws {
        var prefix = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty && !path.hasPrefix("/") ? "" : "/") + component
            var status = stat()
            if stat(prefix, &status) == 0 { continue }
            let lookError = errno
            // A part that is not there: made below. A part that is a file, or not reachable: said.
            guard lookError == ENOENT else {
                if lookError == ENOTDIR { throw UsageError("cannot make \(prefix): a part of it is a file, not a folder") }
                throw ToolFailure("cannot make \(prefix): \(String(cString: strerror(lookError)))")
            }
            guard mkdir(prefix, 0o700) == 0 else {
                let makeError = errno
                // Made meanwhile by another process: used as it is, as one that was there.
                if makeError == EEXIST { continue }
                throw ToolFailure("cannot make \(prefix): \(String(cString: strerror(makeError)))")
            }
            try ownerOnly(prefix)
            Output.error("wormhole: made \(prefix) (0700)")
        }
    }

    /// Sets the folder just made at `path` to mode 0700 when the umask took some of the owner's bits (a umask
    /// can only take bits away from mkdir's 0700). Through a descriptor opened without following a link and
    /// without waiting (a FIFO swapped in is refused, not waited on), so that a folder swapped for a link in
    /// between changes nothing elsewhere.
    private static func ownerOnly(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw ToolFailure("cannot open \(path), just made: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw ToolFailure("cannot look at \(path): \(String(cString: strerror(errno)))") }
        guard status.st_mode & 0o7777 != 0o700 else { return }
        guard fchmod(fd, 0o700) == 0 else { throw ToolFailure("cannot set \(path) to 0700: \(String(cString: strerror(errno)))") }
    }
}
