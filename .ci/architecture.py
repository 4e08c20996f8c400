#!/usr/bin/env python3
"""Checks that the Architecture article (Sources/Wormhole/Wormhole.docc/Architecture.md) still describes the tree.

- Every Swift file of the library's targets (each `.target` of Package.swift whose folder is in Sources/, so not
  the tool's) is named in the article, in backticks, by its file name (`Frame.swift`) or a path that ends with it
  (`Wire/Frame.swift`). A shorthand does not count: `+Posting` names no file, so the article names
  `GroupNotificationCenter+Posting.swift`.
- Every file the article names in backticks (a span that ends in `.swift`) exists: under Sources/, as that file
  name or as that path's end, or as that path from the package's top (`Package.swift`).
- Every type the article names in backticks (a span that starts with an upper-case letter: `Frame`, ``Frame``,
  `@GroupStorage`, `Frame.Header`, `Listener.run()`, ``GroupNotificationCenter/Configuration``) is declared in
  Sources/ or in the test support (a class, struct, enum, protocol, actor or typealias, at the top of a file or
  nested in a type or an extension); a dotted name's members are declared (as a type, func, var, let, case or init)
  in a file that declares or extends its first type. Names of the system's frameworks and the C library's are
  allowed by the list below; so are the names of the package's targets.
- Each hop of the two walks ("### A Post", "### A Received Frame") is a numbered item that begins with the file and
  the function it goes through, `File.swift` — `function`, and that function (a func, an init, or a computed var,
  with or without its type and argument labels) is declared in that file.

It first checks itself on a small tree with one problem of each kind, which it must find exactly. Exits 1 with
one line per problem.
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ARTICLE = os.path.join("Sources", "Wormhole", "Wormhole.docc", "Architecture.md")
# Where the types it names may be declared: the sources, and the test support (the relay's stand-in link).
DECLARED_IN = ("Sources", os.path.join("Tests", "WormholeTestSupport"))
WALKS = ("A Post", "A Received Frame")
# Names the article may use that no file here declares: the frameworks the libraries import, and the types of
# theirs it names.
ALLOWED = {
    "Foundation", "Synchronization", "Combine", "SwiftUI", "WidgetKit", "WatchConnectivity",
    "Codable",  # the standard library's
    "NSNull", "OperationQueue",  # Foundation's
    "Mutex",  # Synchronization's
    "WCSession",  # WatchConnectivity's, which the watch link uses
}
# The C library's names: all capitals, with an underscore (`SO_PEERCRED`, `LOCAL_PEERPID`).
C_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")

SPAN = re.compile(r"``([^`]+)``|`([^`]+)`")
DECLARATION = re.compile(r"\b(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)")
MEMBER = re.compile(r"\b(?:class|struct|enum|protocol|actor|typealias|func|var|let|case)\s+([A-Za-z_]\w*)"
                    r"|\b(init)\s*[?!]?\s*[<(]")
CASE_LIST = re.compile(r"\bcase\s+([^:=\n{]+)")
EXTENSION = re.compile(r"\bextension\s+([A-Z]\w*)")
FUNCTION = re.compile(r"\b(?:func|var)\s+([A-Za-z_]\w*)|\b(init)\s*[?!]?\s*[<(]")
HOP = re.compile(r"^`([^`]+\.swift)` — `([^`]+)`")


def strip(text):
    """The code without comments and string literals."""
    text = re.sub(r'"""[\s\S]*?"""', '""', text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def swift_files(root, folder):
    """The Swift files under `root`/`folder`, as paths relative to `root`, outside documentation catalogs."""
    found = []
    for directory, folders, names in os.walk(os.path.join(root, folder)):
        folders[:] = sorted(f for f in folders if not f.endswith(".docc"))
        found += [os.path.relpath(os.path.join(directory, n), root) for n in sorted(names) if n.endswith(".swift")]
    return found


def spans(text):
    """The article's backticked spans, in order, each with whether it is a symbol link (``X``)."""
    return [(link or code, bool(link)) for link, code in SPAN.findall(text)]


def section(text, title):
    """The text under a heading named `title`, to the next heading of its level or above."""
    m = re.search(r"^(#+) " + re.escape(title) + r"\s*$", text, re.M)
    if not m:
        return None
    end = re.search(r"^#{1,%d} " % len(m.group(1)), text[m.end():], re.M)
    return text[m.end():m.end() + end.start()] if end else text[m.end():]


def names_file(span, path):
    """Whether the span `span` names the file at `path` (its name, or a path that ends it)."""
    return path == span or path.endswith("/" + span)


def library_targets(root):
    """The library's targets: each `.target` of the package's manifest whose folder is in Sources/."""
    manifest = open(os.path.join(root, "Package.swift"), encoding="utf-8").read()
    names = re.findall(r'\.target\(\s*name:\s*"([^"]+)"', manifest)
    return [name for name in names if os.path.isdir(os.path.join(root, "Sources", name))]


def check(root):
    """The problems of the article and tree at `root` (a package's folder), as lines."""
    text = open(os.path.join(root, ARTICLE), encoding="utf-8").read()
    article = os.path.basename(ARTICLE)
    files = {span for span, _ in spans(text) if span.endswith(".swift")}
    sources = [p.replace(os.sep, "/") for p in swift_files(root, "Sources")]
    problems = []

    # Every file of the library is named.
    for target in library_targets(root):
        for path in swift_files(root, os.path.join("Sources", target)):
            path = path.replace(os.sep, "/")
            if not any(names_file(s, path) for s in files):
                problems.append(f"{article}: names no file {path}")
    # Every file named exists.
    for span in sorted(files):
        if not any(names_file(span, path) for path in sources) and not os.path.isfile(os.path.join(root, span)):
            problems.append(f"{article}: names `{span}`, which is no file under Sources/ nor at the package's top")

    # What the sources declare: the types, and for each type, the files that declare or extend it.
    declared, homes, code_of = set(os.listdir(os.path.join(root, "Sources"))), {}, {}
    for folder in DECLARED_IN:
        for path in swift_files(root, folder):
            code = strip(open(os.path.join(root, path), encoding="utf-8").read())
            code_of[path.replace(os.sep, "/")] = code
            for name in DECLARATION.findall(code):
                declared.add(name)
                homes.setdefault(name, set()).add(path)
            for name in EXTENSION.findall(code):
                homes.setdefault(name, set()).add(path)

    def members(type_name):
        names = set()
        for path in homes.get(type_name, ()):
            code = code_of[path.replace(os.sep, "/")]
            names |= {a or b for a, b in MEMBER.findall(code)}
            for cases in CASE_LIST.findall(code):
                names |= set(re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)", cases))
        return names

    # Every type named is declared, and so is each member a dotted name names.
    for span, link in sorted(set(spans(text))):
        name = span.lstrip("@")
        name = name.replace("/", ".") if link else name
        name = re.sub(r"\([^()]*\)$", "", name)
        if name.endswith(".swift") or not re.fullmatch(r"[A-Z]\w*(?:\.[A-Za-z_]\w*)*", name):
            continue
        outer, *inner = name.split(".")
        if outer in ALLOWED or C_NAME.match(outer):
            continue
        if outer not in declared:
            problems.append(f"{article}: names `{span}`, but no type {outer} is declared")
            continue
        known = members(outer)
        for part in inner:
            if part not in known:
                problems.append(f"{article}: names `{span}`, but {outer} declares no {part}")
                break

    # Each hop of the walks names a file and a function declared in it (a file that does not exist is said above).
    for walk in WALKS:
        body = section(text, walk)
        if body is None:
            problems.append(f"{article}: has no walk \"{walk}\"")
            continue
        for number, item in re.findall(r"^(\d+)\. (.*)$", body, re.M):
            m = HOP.match(item)
            if not m:
                problems.append(f"{article}: hop {number} of \"{walk}\" does not begin with "
                                "`File.swift` — `function`")
                continue
            span, function = m.groups()
            function = re.sub(r"\(.*\)$", "", function).split(".")[-1]
            paths = [p for p in sources if names_file(span, p)]
            if paths and not any(function in {a or b for a, b in FUNCTION.findall(code_of[p])} for p in paths):
                problems.append(f"{article}: hop {number} of \"{walk}\" names `{function}`, "
                                f"which {span} does not declare")
    return problems


# A small tree with one of each kind of problem: the check must find exactly these, or it checks nothing.
SELF_TEST = {
    "Sources/WormholeSystem/Platform/Kind.swift": "enum Kind {\n    case a, nudge\n}\n",
    "Sources/WormholeFormats/Wire/Frame.swift": (
        "struct Frame {\n    struct Header {}\n    // func lost() {}\n    func decode() {}\n}\n"
        "extension Frame {\n    enum Mark { case relayed }\n}\n"),
    "Sources/Wormhole/Center/Fanout.swift": "final class Fanout {\n    func send() {}\n    var route: Int { 0 }\n}\n",
    "Sources/Wormhole/Center/Fanout+Links.swift": "extension Fanout {\n    func prune() {}\n}\n",
    "Sources/Wormhole/Transport/PeerLink.swift": "final class PeerLink {\n    init(listener: Int) {}\n}\n",
    "Sources/WormholeSystem/Limits.swift": "enum Limits {}\n",
    "Sources/WormholeRelay/RelayEngine.swift": "final class RelayEngine {}\n",
    "Sources/WormholeUI/Shelf.swift": "struct Shelf {}\n",
    "Tests/WormholeTestSupport/FileLink.swift": "final class FileLink {}\n",
    "Sources/WormholeTool/main.swift": "print(1)\n",
    "Package.swift": (
        '.target(name: "WormholeSystem"), .target(name: "WormholeFormats"), .target(\n    name: "Wormhole"),\n'
        '.target(name: "WormholeUI"), .target(name: "WormholeRelay"), .executableTarget(name: "WormholeTool"),\n'
        '.target(name: "WormholeTestSupport", path: "Tests/WormholeTestSupport")\n'),
    ARTICLE: (
        "# Architecture\n\n## Overview\n\n`Package.swift`: `Sources/WormholeRelay` and `WormholeUI` over"
        " `Foundation`'s `Mutex`;"
        " `SO_PEERCRED`; `Shelf.swift`.\n\n"
        "### A Post\n\n"
        "1. `Center/Fanout.swift` — `Fanout.send()` hands the frame on (`route`).\n"
        "2. `Fanout+Links.swift` — `prune`: closes links.\n"
        "3. `Transport/PeerLink.swift` — `PeerLink.init(listener:)`, then `connect()`.\n"
        "4. `Wire/Frame.swift` — `lost`: a function only a comment names.\n\n"
        "### A Received Frame\n\n"
        "1. `Frame.swift` — `decode` decodes it (`Frame.Header`, `Frame.Mark.relayed`).\n"
        "2. The sink hands it up.\n\n"
        "## Layer by Layer\n\n"
        "- `Kind.swift`: `Kind`, with `Kind.nudge` and `Kind.bell`; `Spool.swift`: `SpoolFolder`.\n"
        "- `RelayEngine.swift` over a `FileLink`, a ``GroupNotificationCenter/Configuration``.\n"),
}
SELF_TEST_FINDS = {
    "Architecture.md: names no file Sources/WormholeSystem/Limits.swift",
    "Architecture.md: names `Spool.swift`, which is no file under Sources/ nor at the package's top",
    "Architecture.md: names `SpoolFolder`, but no type SpoolFolder is declared",
    "Architecture.md: names `Kind.bell`, but Kind declares no bell",
    "Architecture.md: names `GroupNotificationCenter/Configuration`, but no type GroupNotificationCenter is declared",
    "Architecture.md: hop 4 of \"A Post\" names `lost`, which Wire/Frame.swift does not declare",
    "Architecture.md: hop 2 of \"A Received Frame\" does not begin with `File.swift` — `function`",
}


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        for name, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w", encoding="utf-8") as file:
                file.write(text)
        found = set(check(folder))
    if found != SELF_TEST_FINDS:
        print("architecture.py self-test: missed", sorted(SELF_TEST_FINDS - found), "and wrongly found",
              sorted(found - SELF_TEST_FINDS))
        return 1
    return 0


if __name__ == "__main__":
    if self_test():
        sys.exit(1)
    problems = check(ROOT)
    for p in problems:
        print(p)
    print(f"{len(problems)} problems", file=sys.stderr)
    sys.exit(1 if problems else 0)
