#!/usr/bin/env python3
"""Builds every Swift code block of the README and the documentation catalog as it is written, each as a
program of its own, against the library just built, in Swift 6 language mode; and resolves every package
manifest they show against this repository.

The convention the documents follow: a block is complete. It carries its own imports and declares everything
it uses, so that a reader can paste it as the `main.swift` of an executable target that depends on Wormhole
(the README's "Add the package" shows that target). A block that goes on from the one before it on its page
says so in a comment of its own on the line before its fence,

    <!-- continues -->

and is built joined to the blocks it continues (errors still name each block's own lines). Prefer complete
blocks; the comment is for a fragment that makes no sense alone.

Each program is compiled to object code, not only type-checked: the checks of region-based isolation
("sending ... risks causing data races") run after type-checking, and `-typecheck` misses them. Every block
is built twice: as a package's target builds it (nothing isolated by default), and as a main-actor app builds it:
the main actor as the default isolation and the "approachable concurrency" features, the settings of an app
project new in Xcode 26. A warning fails the
check as an error does: what a reader pastes should build clean.

A block that imports a framework that exists only on Apple platforms (SwiftUI, WidgetKit, ...) is built only
there; elsewhere it is skipped, and the summary says so: `.ci/apple-snippets.py` compiles those for iOS against
the SDKs of ../shared/tools/darwin instead. A block whose first line is `// swift-tools-version:`
is a package's manifest: it is resolved in a temporary folder beside a link named `Wormhole` to this
repository, which checks its `.package(path: "../Wormhole")` and `.product(name:package:)` lines.

Every program that builds here is followed by its expected output, in a comment right after the fence of its
last block (a program that prints nothing has an empty one),

    <!-- output:
    cart now holds [3, 4, 10]
    -->

and is also linked against the library and run (as the package target builds it), with a container root of its
own (`WORMHOLE_CONTAINER_ROOT`) and a time limit: it must end by itself, with status 0, and print exactly those
lines on its standard output.

Run after `swift build` (it reads .build/debug/Modules and the library's objects). About half a second a block
and mode.
"""
import concurrent.futures, os, pathlib, re, shutil, subprocess, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATALOG = ROOT / "Sources/Wormhole/Wormhole.docc"
SOURCES = [ROOT / "README.md", *sorted(CATALOG.rglob("*.md"))]
CONTINUES = "<!-- continues -->"
OUTPUT = re.compile(r"[ \t\n]*<!-- output:\n(.*?)^-->", re.S | re.M)
RUN_SECONDS = 30
APPLE_ONLY = {"SwiftUI", "WidgetKit", "UIKit", "AppKit", "WatchConnectivity", "AppIntents", "ActivityKit"}
MODES = {
    "package": [],
    "main-actor app": ["-default-isolation", "MainActor",
                     "-enable-upcoming-feature", "NonisolatedNonsendingByDefault",
                     "-enable-upcoming-feature", "InferIsolatedConformances"],
}


def blocks():
    """Yields (path, first line of the code, code, whether it continues the previous block, the output expected
    of it when run or None) for each block."""
    for path in SOURCES:
        text = path.read_text()
        for match in re.finditer(r"^```swift\n(.*?)^```\n?", text, re.S | re.M):
            fence = text[: match.start()].count("\n") + 1
            before = [line.strip() for line in text[: match.start()].splitlines() if line.strip()]
            continues = bool(before) and before[-1] == CONTINUES
            output = OUTPUT.match(text, match.end())
            expected = output.group(1).splitlines() if output else None
            yield path.relative_to(ROOT), fence + 1, match.group(1), continues, expected


def programs():
    """Groups the blocks into programs: a block that continues joins the program of the one before it."""
    grouped, expected = [], {}
    for path, line, code, continues, output in blocks():
        if continues:
            if not grouped or grouped[-1][0][0] != path:
                sys.exit(f"snippets: {path}:{line - 1}: '{CONTINUES}' before the first Swift block of its page")
            grouped[-1].append((path, line, code))
        else:
            grouped.append([(path, line, code)])
        if output is not None:
            expected[len(grouped) - 1] = output
    return grouped, expected


def imports(program):
    return {m.group(1) for _, _, code in program for m in re.finditer(r"^import\s+(\w+)", code, re.M)}


def build(program, index, work, modules, mode):
    """Compiles one program to an object file; returns the compiler's diagnostics, or '' when clean."""
    # A folder per program and mode: the modes of one program build at the same time, and a file rewritten while
    # the other compiles it fails that build ("modified during the build").
    source = work / f"program{index}-{mode}" / "main.swift"
    source.parent.mkdir(exist_ok=True)
    # Each block's lines keep their place in their page, so diagnostics name the page and line.
    source.write_text("".join(f'#sourceLocation(file: "{path}", line: {line})\n{code}' for path, line, code in program)
                      + "#sourceLocation()\n")
    result = subprocess.run(
        ["swiftc", "-c", "-swift-version", "6", "-diagnostic-style", "llvm", "-module-name", f"Snippet{index}",
         "-I", str(modules), *MODES[mode], "-o", str(source.with_suffix(".o")), str(source)],
        capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode or re.search(r": (error|warning):", output):
        return output or f"swiftc exited with status {result.returncode}"
    return ""


def run(program, index, work, expected):
    """Links the program built as a package target against the library's objects, runs it, and compares what it
    prints with `expected`; returns what went wrong, or ''."""
    path, line, _ = program[0]
    folder = work / f"program{index}-package"
    # The library's objects (its layers' targets too), and those of each of the package's other libraries the
    # program imports.
    layers = ["WormholeEngine", "Wormhole"]
    libraries = layers + sorted(imports(program) & {"WormholeRelay", "WormholeUI", "WormholeBridge"})
    # The bridge is built on the relay's parts.
    if "WormholeBridge" in libraries and "WormholeRelay" not in libraries:
        libraries.append("WormholeRelay")
    # Only the objects of files the target has now: a build folder keeps those of files renamed or removed since.
    objects = sorted(str(p) for library in libraries for p in (ROOT / f".build/debug/{library}.build").glob("*.o")
                     if p.name[:-len(".o")] in {f.name for f in (ROOT / "Sources" / library).rglob("*.swift")})
    executable = folder / "program"
    result = subprocess.run(["swiftc", "-o", str(executable), str(folder / "main.o"), *objects],
                            capture_output=True, text=True)
    if result.returncode:
        return f"{path}:{line}: does not link:\n{(result.stdout + result.stderr).strip()}"
    root = folder / "containers"
    root.mkdir(exist_ok=True)
    environment = {**os.environ, "WORMHOLE_CONTAINER_ROOT": str(root)}
    try:
        result = subprocess.run([str(executable)], capture_output=True, text=True, timeout=RUN_SECONDS,
                                env=environment, cwd=folder)
    except subprocess.TimeoutExpired as timeout:
        printed = (timeout.stdout or b"").decode(errors="replace") if isinstance(timeout.stdout, bytes) else (timeout.stdout or "")
        return f"{path}:{line}: did not end within {RUN_SECONDS} s; it printed:\n{printed}"
    printed = [text.rstrip() for text in result.stdout.splitlines()]
    if result.returncode or printed != [text.rstrip() for text in expected]:
        return (f"{path}:{line}: run as written, it exited with status {result.returncode} and printed:\n"
                + "\n".join(printed) + "\nwhere its page says it prints:\n" + "\n".join(expected)
                + (f"\nstandard error:\n{result.stderr.strip()}" if result.stderr.strip() else ""))
    return ""


def resolve(program, work):
    """Resolves a manifest block next to a link named Wormhole to this repository."""
    (path, line, code), = program
    folder = work / "manifest" / "App"
    (folder / "Sources").mkdir(parents=True, exist_ok=True)
    link = work / "manifest" / "Wormhole"
    if not link.exists():
        link.symlink_to(ROOT)
    (folder / "Package.swift").write_text(code)
    for target in re.findall(r'(?:executableTarget|target)\(\s*name:\s*"([^"]+)"', code):
        (folder / "Sources" / target).mkdir(exist_ok=True)
        (folder / "Sources" / target / "main.swift").write_text("")
    result = subprocess.run(["swift", "package", "--package-path", str(folder), "show-dependencies"],
                            capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode or "error:" in output or "warning:" in output:
        return f"{path}:{line}: the manifest does not resolve against this repository:\n{output}"
    return ""


def start_nats(work):
    """A nats-server with JetStream on 127.0.0.1:4222, ready; None when there is none to start."""
    executable = shutil.which("nats-server") or next(
        (path for path in ("/usr/sbin/nats-server", "/usr/local/sbin/nats-server") if os.access(path, os.X_OK)), None)
    if executable is None:
        return None
    log = work / "nats.log"
    server = subprocess.Popen([executable, "-a", "127.0.0.1", "-p", "4222", "-js", "-sd", str(work / "nats"),
                               "-l", str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and "Server is ready" in log.read_text(errors="replace"):
            return server
        if server.poll() is not None:
            return None
        time.sleep(0.05)
    server.kill()
    return None


def main():
    modules = ROOT / ".build/debug/Modules"
    if not (modules / "Wormhole.swiftmodule").exists():
        print("snippets: build the package first (swift build)")
        return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="wormhole-snippets-"))
    compiled, manifests, skipped, jobs = [], [], [], []
    grouped, expected = programs()
    for index, program in enumerate(grouped):
        path, line, code = program[0]
        if code.startswith("// swift-tools-version:"):
            manifests.append(program)
        elif sys.platform != "darwin" and imports(program) & APPLE_ONLY:
            skipped.append(f"{path}:{line} (imports {', '.join(sorted(imports(program) & APPLE_ONLY))})")
        else:
            compiled.append(program)
            jobs += [(program, index, mode) for mode in MODES]
    failures = [message for message in (resolve(program, work) for program in manifests) if message]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = pool.map(lambda job: (job, build(job[0], job[1], work, modules, job[2])), jobs)
        for (program, _, mode), output in results:
            if output:
                path, line, _ = program[0]
                failures.append(f"{path}:{line}: does not build clean as a {mode} target builds it:\n{output}")
    runs = [(grouped[index], index) for index in expected if grouped[index] in compiled]
    # Every program that builds here says what it prints, so that none goes unrun.
    for index, program in enumerate(grouped):
        if program in compiled and index not in expected:
            path, line, _ = program[-1]
            failures.append(f"{path}:{line}: a program with no '<!-- output:' comment after it: say what it prints")
    built = not failures
    if built:
        # A program that bridges hosts talks to a NATS server on this machine's default port: one is started for
        # the run, with its store in the work folder.
        server = None
        if any("WormholeBridge" in imports(program) for program, _ in runs):
            server = start_nats(work)
            if server is None:
                failures.append("a program imports WormholeBridge, and nats-server (apt-get install nats-server) "
                                "is not installed or did not start on 127.0.0.1:4222")
        try:
            # One at a time: each may time itself, and two at once on two cores would blur that.
            failures += [message for message in (run(program, index, work, expected[index]) for program, index in runs)
                         if message]
        finally:
            if server is not None:
                server.kill()
                server.wait()
    print("\n\n".join(failures))
    for block in skipped:
        print(f"snippets: skipped on this platform, which lacks an Apple framework it imports: {block}; "
              f".ci/apple-snippets.py compiles it for iOS")
    blocks = sum(len(program) for program in compiled)
    print(f"snippets: {blocks} Swift blocks built as {len(compiled)} programs, each as a "
          f"{' and as a '.join(MODES)} target builds it; {len(runs) if built else 0} run and their output checked; "
          f"{len(manifests)} manifests resolved; {len(skipped)} skipped; "
          f"{len(failures)} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
