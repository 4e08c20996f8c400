#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each on its seed corpus for the same time, one after the other:
#   bash Benchmarks/Fuzz/run-fuzzer.sh [seconds]      (default 60, for each target)
# fuzz-decoders reads what another process of the group wrote (Wormhole's readers); fuzz-nats reads what a NATS
# server sends (the bridge's parser of NATS's protocol). An input that takes over a second, or a single allocation
# over 64 MiB, counts as a crash. The script exits with the first failing target's status, after running both.
#
# fuzz-decoders: everything it reads with is in the engine's target: it links that alone, as a module of its own,
# as SwiftPM builds it, without the API. The fuzz target's own module is named after the test target, so that the
# class names in the corpus (FuzzNode's) are the same for the tests.
# fuzz-nats: Sources/WormholeBridge/NATS alone (it imports only Foundation), as the module WormholeBridge, without
# the rest of the bridge or the relay it stands on.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out/corpus" "$out/corpus-nats" "$out/modules"
find Tests/WormholeTests/Corpus -type f -exec cp {} "$out/corpus/" \;
find Tests/WormholeTests/CorpusNATS -type f -exec cp {} "$out/corpus-nats/" \;
flags=(-sanitize=fuzzer,address -parse-as-library -O -package-name wormhole -enable-testing -D WORMHOLE_FUZZING
       -swift-version 6 -I "$out/modules")
swiftc "${flags[@]}" -c -wmo -module-name WormholeEngine -emit-module \
    -emit-module-path "$out/modules/WormholeEngine.swiftmodule" $(find Sources/WormholeEngine -name '*.swift') \
    -o "$out/WormholeEngine.o"
swiftc "${flags[@]}" -module-name WormholeTests Tests/WormholeTests/Support/FuzzNode.swift \
    Tests/WormholeTests/Support/ArchiveMutator.swift Benchmarks/Fuzz/FuzzDecoders.swift \
    "$out/WormholeEngine.o" -o "$out/fuzz-decoders"
swiftc "${flags[@]}" -c -wmo -module-name WormholeBridge -emit-module \
    -emit-module-path "$out/modules/WormholeBridge.swiftmodule" Sources/WormholeBridge/NATS/*.swift \
    -o "$out/WormholeBridgeNATS.o"
swiftc "${flags[@]}" -module-name FuzzNATS Benchmarks/Fuzz/FuzzNATS.swift "$out/WormholeBridgeNATS.o" \
    -o "$out/fuzz-nats"

status=0
echo "== fuzz-decoders, ${seconds} s"
"$out/fuzz-decoders" -max_total_time="$seconds" -max_len=16384 -timeout=1 -malloc_limit_mb=64 \
    -print_final_stats=1 "$out/corpus" 2>&1 | tee "$out/fuzz-decoders.log" || status=$?
echo "== fuzz-nats, ${seconds} s"
"$out/fuzz-nats" -max_total_time="$seconds" -max_len=16384 -timeout=1 -malloc_limit_mb=64 \
    -print_final_stats=1 "$out/corpus-nats" 2>&1 | tee "$out/fuzz-nats.log" || {
        code=$?
        [ "$status" -ne 0 ] || status=$code
    }
for target in fuzz-decoders fuzz-nats; do
    echo "== $target final stats"
    grep '^stat::' "$out/$target.log" || echo "(none: see $out/$target.log)"
done
exit "$status"
