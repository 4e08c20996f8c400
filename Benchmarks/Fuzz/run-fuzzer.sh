#!/usr/bin/env bash
# Builds the libFuzzer target over Wormhole's readers and runs it on the seed corpus.
#   bash Benchmarks/Fuzz/run-fuzzer.sh [seconds]      (default 60)
# An input that takes over a second, or a single allocation over 64 MiB, counts as a crash. Everything it reads
# with is in the engine's target: it links that alone, as a module of its own, as SwiftPM builds it, without the
# API. The fuzz target's own module is named after the test target, so that the class names in the corpus
# (FuzzNode's) are the same for the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out/corpus" "$out/modules"
find Tests/WormholeTests/Corpus -type f -exec cp {} "$out/corpus/" \;
flags=(-sanitize=fuzzer,address -parse-as-library -O -package-name wormhole -enable-testing -D WORMHOLE_FUZZING
       -swift-version 6 -I "$out/modules")
swiftc "${flags[@]}" -c -wmo -module-name WormholeEngine -emit-module \
    -emit-module-path "$out/modules/WormholeEngine.swiftmodule" $(find Sources/WormholeEngine -name '*.swift') \
    -o "$out/WormholeEngine.o"
swiftc "${flags[@]}" -module-name WormholeTests Tests/WormholeTests/Support/FuzzNode.swift \
    Tests/WormholeTests/Support/ArchiveMutator.swift Benchmarks/Fuzz/FuzzDecoders.swift \
    "$out/WormholeEngine.o" -o "$out/fuzz-decoders"
"$out/fuzz-decoders" -max_total_time="$seconds" -max_len=16384 -timeout=1 -malloc_limit_mb=64 \
    -print_final_stats=1 "$out/corpus"
