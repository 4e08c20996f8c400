#!/usr/bin/env bash
# Compiles the example's three Xcode targets for iOS as Xcode would hold them: each of CartApp, CartWidget and
# CartShare with CartShared's files dropped in, to arm64 object code for arm64-apple-ios18.0 against the iOS 18.6
# SDK that ../shared/tools/darwin/setup.sh prepared, in Swift 6 language mode, as a package's target builds it and
# as a new Xcode 26 target does (the main actor as default isolation, the "approachable concurrency" features:
# .ci/snippets.py's two modes). A warning fails as an error does.
#
# It uses the Wormhole and WormholeUI modules (and the layers' modules beside them) that `bash
# ../shared/tools/darwin/link.sh ios --targets WormholeEngine,Wormhole,WormholeUI`
# compiled (MODULES, default .build-darwin/ios); DARWIN_SDK_ROOT as for link.sh. Objects go
# to OUT (default .build-darwin/examples). Exit status: 0 when all build clean, 1 when one does not, 2 when it
# could not run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sdks=${DARWIN_SDK_ROOT:-$HOME/.cache/wormhole-darwin}
modules=$(realpath -m "${MODULES:-$root/.build-darwin/ios}")
out=$(realpath -m "${OUT:-$root/.build-darwin/examples}")
[ -d "$sdks/iPhoneOS18.sdk" ] || { echo "check-ios: no iOS 18 SDK at $sdks (see ../shared/tools/darwin/README.md)"; exit 2; }
for module in WormholeEngine Wormhole WormholeUI; do
    [ -e "$modules/$module.swiftmodule" ] || {
        echo "check-ios: no $module module for iOS in $modules: run \`bash ../shared/tools/darwin/link.sh ios" \
            "--targets WormholeEngine,Wormhole,WormholeUI\` first"
        exit 2
    }
done
mkdir -p "$out"
common=(-c -wmo -parse-as-library -swift-version 6 -diagnostic-style llvm
        -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
        -target arm64-apple-ios18.0 -sdk "$sdks/iPhoneOS18.sdk" -resource-dir "$sdks/res18"
        -module-cache-path "$sdks/mcache-ios18" -I "$modules")
app_target=(-default-isolation MainActor -enable-upcoming-feature NonisolatedNonsendingByDefault
            -enable-upcoming-feature InferIsolatedConformances)
failures=0
for target in CartApp CartWidget CartShare; do
    for mode in package app; do
        flags=(); [ "$mode" = app ] && flags=("${app_target[@]}")
        log=$out/$target-$mode.log
        nice -n 19 swiftc "${common[@]}" "${flags[@]}" -module-name "$target" -o "$out/$target-$mode.o" \
            "$root"/Examples/CartShared/*.swift "$root/Examples/$target"/*.swift > "$log" 2>&1
        status=$?
        if [ $status -ne 0 ] || grep -qE ': (error|warning):' "$log"; then
            echo "check-ios: $target does not build clean for iOS as a $mode target builds it:"
            cat "$log"
            failures=$((failures + 1))
        fi
    done
done
echo "check-ios: CartApp, CartWidget and CartShare (each with CartShared) built for iOS as package and as" \
    "main-actor app targets; $failures failing"
[ $failures -eq 0 ]
