#!/usr/bin/env python3
"""Compiles for iOS the Swift code blocks of the README and the documentation catalog that import a framework only
Apple platforms have (SwiftUI, WidgetKit, ...), which `.ci/snippets.py` skips on Linux: each program (blocks
joined as snippets.py joins them) is compiled to arm64 object code for `arm64-apple-ios18.0` against the iOS 18.6
SDK that ../shared/tools/darwin/setup.sh prepared, in Swift 6 language mode, as a package's target and as a
main-actor app builds it (snippets.py's two modes). A warning fails as an error does.

It uses the library modules that
`link.sh ios --targets WormholeEngine,Wormhole,WormholeUI,WormholeRelay` compiled for iOS
(.build-darwin/ios), so run that first; the SDK flags are typecheck.py's and link.sh's for iOS (DARWIN_SDK_ROOT,
default ~/.cache/wormhole-darwin). Exit status: 0 when every such program builds clean, 1 when one does not, 2 when
it could not run (no SDK, no modules).
"""
import os, pathlib, subprocess, sys, tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import snippets  # noqa: E402  (the blocks, how they join, the modes, the Apple-only frameworks)

LIBRARIES = ["Wormhole", "WormholeUI", "WormholeRelay"]


def main():
    sdks = pathlib.Path(os.environ.get("DARWIN_SDK_ROOT", pathlib.Path.home() / ".cache/wormhole-darwin"))
    sdk = sdks / "iPhoneOS18.sdk"
    if not sdk.exists():
        print(f"apple-snippets: no iOS 18 SDK at {sdk} (see ../shared/tools/darwin/README.md)")
        return 2
    modules = snippets.ROOT / ".build-darwin/ios"
    missing = [name for name in LIBRARIES if not (modules / f"{name}.swiftmodule").exists()]
    if missing:
        print(f"apple-snippets: no {', '.join(missing)} module for iOS in {modules}: run "
              f"`bash ../shared/tools/darwin/link.sh ios --targets {','.join(LIBRARIES)}` first")
        return 2
    common = ["-target", "arm64-apple-ios18.0", "-sdk", str(sdk), "-resource-dir", str(sdks / "res18"),
              "-module-cache-path", str(sdks / "mcache-ios18"), "-I", str(modules)]
    work = pathlib.Path(tempfile.mkdtemp(prefix="wormhole-apple-snippets-"))
    failures, built = [], []
    grouped, _ = snippets.programs()
    for index, program in enumerate(grouped):
        path, line, code = program[0]
        if code.startswith("// swift-tools-version:") or not snippets.imports(program) & snippets.APPLE_ONLY:
            continue
        built.append(program)
        source = work / f"program{index}" / "main.swift"
        source.parent.mkdir(exist_ok=True)
        source.write_text("".join(f'#sourceLocation(file: "{p}", line: {l})\n{c}' for p, l, c in program)
                          + "#sourceLocation()\n")
        for mode, flags in snippets.MODES.items():
            result = subprocess.run(
                ["swiftc", "-c", "-swift-version", "6", "-diagnostic-style", "llvm", "-module-name", f"Snippet{index}",
                 *common, *flags, "-o", str(source.with_suffix(".o")), str(source)],
                capture_output=True, text=True)
            output = (result.stdout + result.stderr).strip()
            if result.returncode or ": error:" in output or ": warning:" in output:
                failures.append(f"{path}:{line}: does not build clean for iOS as a {mode} target builds it:\n"
                                f"{output or f'swiftc exited with status {result.returncode}'}")
    print("\n\n".join(failures))
    blocks = sum(len(program) for program in built)
    print(f"apple-snippets: {blocks} Swift blocks importing a framework only Apple platforms have built for iOS "
          f"as {len(built)} programs, each as a {' and as a '.join(snippets.MODES)} target builds it; "
          f"{len(failures)} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
