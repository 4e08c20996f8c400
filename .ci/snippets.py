#!/usr/bin/env python3
"""Type-checks every Swift code block of the README and the documentation catalog against the built library,
in Swift 6 language mode with complete concurrency checking.

Each block becomes a file of its own: its type declarations (lines from a `struct`, `class`, `enum`,
`extension` or attribute at the start of a line to the `}` that closes it there) go into an enum of the
block's own, and its statements into an async throwing function of that enum on the main actor, as an app's
code runs. A block that adds a package dependency (`.package(`) is not Swift of a target and is skipped.
Names a block may use without declaring them are declared once, in PRELUDE below.
Run after `swift build` (it reads .build/debug/Modules).
"""
import pathlib, re, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "README.md", *sorted((ROOT / "Sources/Wormhole/Wormhole.docc").glob("*.md"))]
PRELUDE = '''import Foundation
import Observation
import Wormhole

/// What the documentation's blocks use without declaring it: a center, and a class of the user's own.
nonisolated(unsafe) var center = try! GroupNotificationCenter(containerURL: URL(fileURLWithPath: "/tmp/snippets"))
final class Note: NSObject, NSSecureCoding {
    static let supportsSecureCoding = true
    let title: String
    init(title: String) { self.title = title }
    init?(coder: NSCoder) { title = coder.decodeObject(of: NSString.self, forKey: "title") as String? ?? "" }
    func encode(with coder: NSCoder) { coder.encode(title as NSString, forKey: "title") }
}
'''
DECLARATION = re.compile(r"^(struct|final class|class|enum|extension|actor|@)")

def blocks():
    for path in SOURCES:
        text = path.read_text()
        for match in re.finditer(r"```swift\n(.*?)```", text, re.S):
            line = text[: match.start()].count("\n") + 1
            yield path.relative_to(ROOT), line, match.group(1)

def wrap(index, body):
    declarations, statements, depth = [], [], None
    for line in body.splitlines():
        if depth is None and DECLARATION.match(line) and not line.startswith("@MainActor func"):
            depth = 0
        if depth is not None:
            declarations.append("    " + line)
            if line == "}" or (line.rstrip().endswith("}") and line.count("{") == line.count("}") and not line.startswith("@")):
                depth = None
        elif not line.startswith("import "):
            statements.append("        " + line)
    return (f"import Foundation\nimport Observation\nimport Wormhole\n\nenum Snippet{index} {{\n"
            + "\n".join(declarations)
            + f"\n    @MainActor static func run() async throws {{\n" + "\n".join(statements) + "\n    }\n}\n")

def main():
    modules = ROOT / ".build/debug/Modules"
    if not (modules / "Wormhole.swiftmodule").exists():
        print("snippets: build the package first (swift build)"); return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="wormhole-snippets-"))
    files, origins = [work / "Prelude.swift"], {}
    files[0].write_text(PRELUDE)
    for index, (path, line, body) in enumerate(blocks()):
        if body.lstrip().startswith(".package("):
            continue
        file = work / f"Snippet{index}.swift"
        file.write_text(wrap(index, body))
        files.append(file)
        origins[file.name] = f"{path}:{line}"
    result = subprocess.run(
        ["swiftc", "-typecheck", "-swift-version", "6", "-module-name", "Snippets", "-I", str(modules), *map(str, files)],
        capture_output=True, text=True)
    output = result.stdout + result.stderr
    for name, origin in origins.items():
        output = output.replace(str(work / name), f"{origin} (block, as {name})")
    errors = [l for l in output.splitlines() if ": error:" in l]
    print("\n".join(errors) if errors else "")
    print(f"snippets: {len(origins)} code blocks of the README and the catalog, {len(errors)} errors")
    return 1 if result.returncode or errors else 0

sys.exit(main())
