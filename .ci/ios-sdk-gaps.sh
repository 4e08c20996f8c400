#!/usr/bin/env bash
# Prints the path of an SDK root for ../shared/tools/darwin/link.sh (its DARWIN_SDK_ROOT): the one setup.sh
# prepared, with the gaps of the public iOS 18.6 copy filled that keep code importing SwiftUI and WidgetKit from
# linking. The copy is reconstructed, and setup.sh leaves private frameworks out; none of these is the code's:
# - WidgetKit.tbd of the 18.6 copy lists only WidgetKit's Objective-C symbols. Apple's genuine iOS 17.0 stub lists
#   its Swift ones (WidgetCenter.shared, reloadTimelines(ofKind:)) too; that one stands in, its `platform: (null)`
#   read as ios (the OS only ever adds exports).
# - UIKit, which SwiftUI brings, re-exports private frameworks the copies leave out. Each stands as a stub that
#   exports nothing, but UIKitCore, where UIKit's Swift overlay lives on arm64: it exports the overlay's
#   force-load symbol, which every module importing UIKit references (on armv7, libswiftUIKit exports it).
# Everything else is a link to the SDK root setup.sh prepared. Built in .build-darwin/sdk (ignored by git), anew
# on each run (under a second); its module cache stays.
set -euo pipefail
cd "$(dirname "$0")/.."
sdks=${DARWIN_SDK_ROOT:-$HOME/.cache/wormhole-darwin}
out=$PWD/.build-darwin/sdk
ios18=$(readlink -f "$sdks/iPhoneOS18.sdk")
genuine=$(readlink -f "$sdks/iPhoneOS.sdk")
[ -d "$ios18" ] && [ -d "$genuine" ] || { echo "ios-sdk-gaps: no iOS SDKs at $sdks (see ../shared/tools/darwin/README.md)" >&2; exit 2; }
rm -rf "$out/iPhoneOS18.sdk"
mkdir -p "$out/mcache-ios18"
for entry in iPhoneOS.sdk MacOSX.sdk res res18 no-shim shim-macos; do
    [ -e "$sdks/$entry" ] && ln -sfn "$(readlink -f "$sdks/$entry")" "$out/$entry"
done
cp -as "$ios18" "$out/iPhoneOS18.sdk"
widgetkit=System/Library/Frameworks/WidgetKit.framework/WidgetKit.tbd
rm "$out/iPhoneOS18.sdk/$widgetkit"
sed 's/^platform:\( *\)(null)/platform:\1ios/' "$genuine/$widgetkit" > "$out/iPhoneOS18.sdk/$widgetkit"
for framework in $(sed -n 's|.*/System/Library/PrivateFrameworks/\([A-Za-z]*\)\.framework/.*|\1|p' \
        "$ios18/System/Library/Frameworks/UIKit.framework/UIKit.tbd" | sort -u); do
    folder=$out/iPhoneOS18.sdk/System/Library/PrivateFrameworks/$framework.framework
    mkdir -p "$folder"
    {
        printf -- '--- !tapi-tbd-v3\narchs: [ arm64, arm64e ]\nplatform: ios\n'
        printf 'install-name: /System/Library/PrivateFrameworks/%s.framework/%s\n' "$framework" "$framework"
        printf 'current-version: 1\ncompatibility-version: 1\n'
        if [ "$framework" = UIKitCore ]; then
            printf "exports:\n  - archs: [ arm64, arm64e ]\n    symbols: [ '__swift_FORCE_LOAD_\$_swiftUIKit' ]\n"
        fi
        printf '...\n'
    } > "$folder/$framework.tbd"
done
echo "$out"
