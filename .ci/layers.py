#!/usr/bin/env python3
"""Checks what the compiler cannot about the library's layering. The targets depend one way (Package.swift:
WormholeEngine < Wormhole < WormholeUI | WormholeRelay < WormholeBridge), and the compiler refuses a use of a target that a target
does not depend on. Inside the engine, the order of its folders is this check's: a file uses only types of its own
layer and the layers below. And only Platform/ imports or calls the C library or
names its errno values (the others use Errno's names); and one platform seam: what Linux and Apple platforms do
differently is in Platform/Linux/ and Platform/Darwin/, each file under one #if; anywhere else (the tool too) an
#if that asks for a platform only chooses the C library's module for an import, or guards a whole file named for
its platform (`X+Darwin.swift`, `X+Linux.swift`; in the libraries beside the core, also `X+iOS.swift`,
`X+watchOS.swift`). The table of limits, which every layer reads, uses no layer's types.

Layers inside each target, top to bottom (Wire and Codec side by side, neither using the other):
  WormholeEngine:  Center > Transport > Storage > Wire | Codec > Container > Platform | Base (the files at its
                   top: the error, the limits, a post's report, the statistics)
  Wormhole:        the API, one layer
WormholeUI, WormholeRelay, WormholeBridge and the tool are one layer each, checked for the C library and the platform seam only:
they ask for a platform by the frameworks they import (`#if canImport(SwiftUI)`, `#if canImport(WatchConnectivity)`),
or in a whole file named for its platform (the two sides of WatchConnectivity: `X+iOS.swift`, `X+watchOS.swift`).
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources")
# Each target's folder: the layer of the files at its top, and the layers of its folders.
TARGETS = {
    "WormholeEngine": ("Base", {"Platform": "Platform", "Container": "Container", "Wire": "Wire", "Codec": "Codec",
                                "Storage": "Storage", "Transport": "Transport", "Center": "Center"}),
    "Wormhole": ("API", {}),
    "WormholeUI": ("UI", {}),
    "WormholeRelay": ("Relay", {}),
    "WormholeBridge": ("Bridge", {}),
    "WormholeTool": ("Tool", {}),
}
# The order inside a target. Base (the engine's top files: the error, the limits, a post's report, the
# statistics) and Platform are one rank, each using the other: the error says an errno's meaning (Errno), and
# every platform call throws the error and reads the limits.
RANK = {"Center": 6, "Transport": 5, "Storage": 4, "Wire": 3, "Codec": 3, "Container": 2, "Base": 1, "Platform": 1,
        "API": 1, "UI": 1, "Relay": 1, "Bridge": 1, "Tool": 1}
# Side by side: neither uses the other.
APART = {("Wire", "Codec"), ("Codec", "Wire")}
# Libraries beside the core, and the tool: checked for the C library and the platform seam; the tool, which
# sets up its own signals, for the platform seam only.
BESIDE = {"UI", "Relay", "Bridge"}

DECL = re.compile(r"^(?:(?:public|internal|private|fileprivate|package|final|open|indirect|nonisolated|@\w+(?:\([^)]*\))?)\s+)*"
                  r"(class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)")


def place_of(path, root):
    """(target, layer) of a file, or None for a file of no checked target."""
    parts = os.path.relpath(path, root).split(os.sep)
    if parts[0] not in TARGETS:
        return None
    top, folders = TARGETS[parts[0]]
    layer = top if len(parts) == 2 else folders.get(parts[1], top)
    return None if layer is None else (parts[0], layer)


def interpolations(literal):
    """The code inside a string literal's interpolations, \\( ... ), which is code like any other."""
    parts, index = [], literal.find("\\(")
    while index >= 0:
        depth, end = 0, index + 1
        while end < len(literal):
            depth += {"(": 1, ")": -1}.get(literal[end], 0)
            if depth == 0:
                break
            end += 1
        parts.append(literal[index + 2:end])
        index = literal.find("\\(", end)
    return " ".join(parts)


def strip(text):
    """The code without comments, and without string literals but for their interpolations."""
    text = re.sub(r'"""[\s\S]*?"""', lambda m: '"" ' + interpolations(m.group(0)), text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', lambda m: '"" ' + interpolations(m.group(0)), text)
    return text


LIBC = re.compile(r"(?<![\w.])(?<!func )(open|openat|close|read|pread|write|pwrite|socket|bind|connect|accept|listen|send|sendmsg|recv|recvmsg|"
                  r"poll|fstat|fstatat|stat|lstat|unlinkat|unlink|renameat|rename|linkat|mkdirat|mkdir|ftruncate|fsync|"
                  r"fcntl|mmap|munmap|pipe|shutdown|setsockopt|getsockopt|kill|getpid|usleep|nanosleep|readlink|"
                  r"fdopendir|readdir|closedir|dup|dup2|memfd_create|sysconf|getrlimit|setrlimit|clock_gettime|getuid|geteuid|"
                  r"strerror|fchmod|fchown|futimens|utimensat|mkstemp|realpath|sysctl|sysctlbyname|access|faccessat|flock|"
                  r"lockf|waitpid|signal|sigaction|raise|sched_yield|select|epoll_create1|epoll_ctl|epoll_wait|eventfd|ioctl|"
                  r"isatty|lseek|fsetxattr|fgetxattr|posix_spawn|sleep|exit|abort|malloc|free|mlock)\(|"
                  r"\b(?:Glibc|Darwin)\.(\w+)\(")
ERRNO = re.compile(r"\b(E(?:NOENT|EXIST|NOTEMPTY|NOTDIR|LOOP|MFILE|NFILE|NOBUFS|NOMEM|INTR|AGAIN|WOULDBLOCK|NOSYS|INVAL|"
                   r"PIPE|CONNREFUSED|CONNRESET|NOTCONN|DESTADDRREQ|PROTOTYPE|MSGSIZE|ACCES|PERM|BADF|IO|NOSPC|ROFS|"
                   r"XDEV|BUSY|SPIPE|FAULT|OPNOTSUPP|CONNABORTED|NAMETOOLONG))\b|\b(currentErrno)\(")

IMPORT_C = re.compile(r"^\s*import\s+(Glibc|Darwin|Musl)\b")
PLATFORM_IF = re.compile(r"^\s*#(?:if|elseif)\b.*(?:\bcanImport\((?:Glibc|Darwin|Musl|ObjectiveC)\)|\bos\(\w+\))")


def platform_problems(path, root, layer, code):
    """Imports of the C library outside Platform/, and #ifs that ask for a platform outside the platform files."""
    rel_in_root = os.path.relpath(path, root)
    rel = os.path.relpath(path, os.path.join(root, ".."))
    seams = [os.path.join("WormholeEngine", "Platform", side) + os.sep for side in ("Linux", "Darwin")]
    problems = []
    lines = [line for line in code.split("\n") if line.strip()]
    for index, line in enumerate(lines):
        m = IMPORT_C.match(line)
        if m and layer not in ("Platform", "Tool"):
            problems.append(f"{rel}: {layer} imports {m.group(1)}; only Platform/ uses the C library")
        if not PLATFORM_IF.match(line):
            continue
        if any(rel_in_root.startswith(seam) for seam in seams):
            continue
        if index == 0 and re.search(r"\+(Darwin|Linux)\.swift$", path):
            continue
        if index == 0 and re.search(r"\+(iOS|watchOS)\.swift$", path) and layer in BESIDE:
            continue
        if index + 1 < len(lines) and re.match(r"^\s*import\s+\w+", lines[index + 1]):
            continue
        problems.append(f"{rel}: {layer} asks for a platform with #if; that code goes in Platform/Linux/ or Platform/Darwin/")
    return problems


def check(root):
    """The problems of the tree at `root` (a package's Sources folder), as lines."""
    files = []
    for target in TARGETS:
        for folder, _, names in os.walk(os.path.join(root, target)):
            if folder.endswith(".docc") or ".docc" + os.sep in folder:
                continue
            files += [os.path.normpath(os.path.join(folder, n)) for n in sorted(names) if n.endswith(".swift")]
    files = [f for f in files if place_of(f, root)]

    defined = {}  # (target, type name, a nested one as Outer.Inner) -> layer
    for path in files:
        target, layer = place_of(path, root)
        outer = None
        for line in strip(open(path, encoding="utf-8").read()).split("\n"):
            m = DECL.match(line)
            if m:
                defined.setdefault((target, m.group(2)), layer)
                outer = m.group(2)
                continue
            e = re.match(r"^(?:public |internal |package )?extension ([A-Z]\w*)\b", line)
            if e:
                outer = e.group(1)
                continue
            n = DECL.match(line[4:]) if line.startswith("    ") and not line.startswith("     ") else None
            if n and outer:
                defined.setdefault((target, outer + "." + n.group(2)), layer)

    problems = []
    for path in files:
        target, layer = place_of(path, root)
        code = strip(open(path, encoding="utf-8").read())
        rel = os.path.relpath(path, os.path.join(root, ".."))
        own = {name: owner for (t, name), owner in defined.items() if t == target}
        # A nested type named with its outer type is a use of the nested one only.
        nested = set(q for q in re.findall(r"\b([A-Z]\w*\.[A-Z]\w*)\b", code) if q in own)
        code = re.sub(r"\b([A-Z]\w*\.[A-Z]\w*)\b", lambda m: "" if m.group(1) in own else m.group(1), code)
        used = set(re.findall(r"\b([A-Z]\w*)\b", code)) | nested
        if os.path.basename(path) == "Limits.swift" and layer == "Base":
            # Every layer reads the table of limits, so it uses none of them: a number a platform says comes in as
            # an extension of Limits in Platform/Linux/ and Platform/Darwin/.
            for name in sorted(n for n in used if own.get(n, "Base") != "Base"):
                problems.append(f"{rel}: the table of limits uses {name} of {own[name]}; "
                                "a platform gives its numbers as an extension of Limits")
        for name in sorted(used):
            owner = own.get(name)
            if owner is None or owner == layer:
                continue
            if RANK[owner] > RANK[layer] or (layer, owner) in APART:
                problems.append(f"{rel}: {layer} uses {name} of {owner}")
        problems += platform_problems(path, root, layer, code)
        if layer not in ("Platform", "Tool"):
            # An errno is compared by its name (Platform/Errno.swift), which says what it means to the library.
            for m in sorted(set(a or b for a, b in ERRNO.findall(code))):
                problems.append(f"{rel}: {layer} names the C library's {m}; use Errno")
            # A call of the file's own method of that name is not one of the C library's.
            own_functions = set(re.findall(r"\bfunc (\w+)\s*[<(]", code))
            calls = set(a or b for a, b in LIBC.findall(code))
            for m in sorted(calls - own_functions):
                problems.append(f"{rel}: {layer} calls {m}() of the C library")
    return problems


# A small tree with one of each kind of problem: the check must find exactly these, or it checks nothing.
SELF_TEST = {
    "Wormhole/GroupNotificationCenter.swift": "public final class GroupNotificationCenter {}\n",
    "WormholeEngine/Center/Hub.swift": "struct Hub {\n    #if os(Linux)\n    let linux = true\n    #endif\n}\n",
    "WormholeEngine/Codec/Coder+Darwin.swift": "#if canImport(ObjectiveC)\nimport Foundation\nstruct Archiver {}\n#endif\n",
    "WormholeEngine/Platform/Linux/Calls.swift": "#if canImport(Glibc)\nimport Glibc\nlet page = 4096\n#endif\n",
    "WormholeEngine/Codec/Coder.swift": "struct Coder {}\n",
    "WormholeEngine/Platform/Kind.swift": "enum Kind { case a }\nstruct Up { let box: Box? }\n",
    "WormholeEngine/Storage/Store.swift": (
        "#if canImport(Glibc)\nimport Glibc\n#endif\nstruct Store {\n    func read(_ x: Int) {}\n    func go(_ e: Int32) {\n        read(1)\n        _ = open(\"x\", 0)\n"
        "        if e == ENOENT {}\n        print(\"\\(Hub())\")\n        // Hub, in a comment, is no use\n    }\n}\n"),
    "WormholeEngine/Wire/Frame.swift": "struct Frame { let coder: Coder? }\n",
    "WormholeEngine/Limits.swift": "enum Limits {\n    static let kinds = Kind.count / 8\n}\n",
    "WormholeUI/Shelf.swift": (
        "#if canImport(SwiftUI)\nimport SwiftUI\n#endif\nstruct Shelf {\n    let center: GroupNotificationCenter\n"
        "    func pid() -> Int32 { getpid() }\n}\n"),
    "WormholeEngine/Container/Box.swift": "struct Box { let kind: Kind? }\n",
    "WormholeRelay/Hop.swift": (
        "#if canImport(WatchConnectivity)\nimport WatchConnectivity\nstruct Hop {\n    let shelf: Shelf?\n"
        "    #if os(watchOS)\n    let watch = true\n    #endif\n}\n#endif\n"),
    "WormholeRelay/Hop+watchOS.swift": "#if os(watchOS)\nextension Hop {\n    var paired: Bool { true }\n}\n#endif\n",
    "WormholeTool/Wait.swift": (
        "import Glibc\nfunc ignore() { signal(SIGPIPE, SIG_IGN) }\nfunc wait() {\n    #if os(Linux)\n    ignore()\n    #endif\n}\n"),
}
SELF_TEST_FINDS = {
    "Sources/WormholeEngine/Center/Hub.swift: Center asks for a platform with #if; that code goes in Platform/Linux/ or Platform/Darwin/",
    "Sources/WormholeEngine/Storage/Store.swift: Storage imports Glibc; only Platform/ uses the C library",
    "Sources/WormholeEngine/Platform/Kind.swift: Platform uses Box of Container",
    "Sources/WormholeEngine/Storage/Store.swift: Storage uses Hub of Center",
    "Sources/WormholeEngine/Storage/Store.swift: Storage names the C library's ENOENT; use Errno",
    "Sources/WormholeEngine/Storage/Store.swift: Storage calls open() of the C library",
    "Sources/WormholeEngine/Wire/Frame.swift: Wire uses Coder of Codec",
    "Sources/WormholeEngine/Limits.swift: the table of limits uses Kind of Platform; "
    "a platform gives its numbers as an extension of Limits",
    "Sources/WormholeUI/Shelf.swift: UI calls getpid() of the C library",
    "Sources/WormholeRelay/Hop.swift: Relay asks for a platform with #if; that code goes in Platform/Linux/ or Platform/Darwin/",
    "Sources/WormholeTool/Wait.swift: Tool asks for a platform with #if; that code goes in Platform/Linux/ or Platform/Darwin/",
}


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        root = os.path.join(folder, "Sources")
        for name, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as file:
                file.write(text)
        found = set(check(root))
    if found != SELF_TEST_FINDS:
        print("layers.py self-test: missed", sorted(SELF_TEST_FINDS - found), "and wrongly found", sorted(found - SELF_TEST_FINDS))
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
