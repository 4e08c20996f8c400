#!/usr/bin/env bash
# Runs the cart pair as the README says: builds it, starts the widget side, starts the app side once the widget
# side watches, both on a temporary container (WORMHOLE_CONTAINER_ROOT), and checks every line the widget side
# prints. Exit 0 when they are exactly the expected ones. Each wait is bounded (60 s); the app side, which answers
# until stopped, is stopped at the end.
#
# usage: Examples/run-pair.sh    (SCRATCH_PATH: the build folder, default .build-examples beside Examples/)
set -euo pipefail
scratch=$(realpath -m "${SCRATCH_PATH:-$(dirname "$0")/../.build-examples}")
cd "$(dirname "$0")"
work=$(mktemp -d)
app=; widget=
cleanup() {
    for pid in $app $widget; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
swift build --scratch-path "$scratch" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
bin=$scratch/debug
fail() {
    echo "run-pair: $1"
    echo "-- the widget side printed:"; printf '%s\n' "${lines[@]}"; cat "$work/widget.err"
    echo "-- the app side printed:"; cat "$work/app" 2>/dev/null || true
    exit 1
}
mkdir -m 700 "$work/root"
export WORMHOLE_CONTAINER_ROOT=$work/root
lines=()

mkfifo "$work/widget"
"$bin/cart-widget-side" > "$work/widget" 2> "$work/widget.err" &
widget=$!
exec 3< "$work/widget"
IFS= read -r -t 60 line <&3 || fail "the widget side did not start watching within 60 s"
lines+=("$line")
"$bin/cart-app-side" > "$work/app" 2>&1 &
app=$!
while true; do
    status=0
    IFS= read -r -t 60 line <&3 || status=$?
    [ "$status" -eq 0 ] || break
    lines+=("$line")
done
[ "$status" -eq 1 ] || fail "the widget side printed nothing for 60 s"
widget_status=0
wait "$widget" || widget_status=$?
widget=
[ "$widget_status" -eq 0 ] || fail "the widget side exited with status $widget_status"

expected=(
    "widget: watching group.com.example.cart"
    "widget: cart changed: apples"
    "widget: cart changed: apples, bread"
    "widget: cart changed: apples, bread, milk"
    "widget: cart.items holds apples, bread, milk"
    "widget: the app counts 3 items"
)
[ "$(printf '%s\n' "${lines[@]}")" = "$(printf '%s\n' "${expected[@]}")" ] \
    || fail "the widget side's lines are not the expected ones"
echo "run-pair: the widget side printed the ${#expected[@]} expected lines"
