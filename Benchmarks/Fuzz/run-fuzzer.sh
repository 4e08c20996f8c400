#!/usr/bin/env bash
# Builds the libFuzzer target over Wormhole's readers and runs it on the seed corpus.
#   bash Benchmarks/Fuzz/run-fuzzer.sh [seconds]      (default 60)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out=.build-fuzz
mkdir -p "$out/corpus"
cp Tests/WormholeTests/Corpus/* "$out/corpus/"
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name WormholeFuzz \
    $(find Sources/Wormhole -name '*.swift') Benchmarks/Fuzz/FuzzDecoders.swift -o "$out/fuzz-decoders"
"$out/fuzz-decoders" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 "$out/corpus"
