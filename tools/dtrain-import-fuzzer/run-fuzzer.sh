#!/bin/sh
# usage: run-fuzzer.sh FUZZER TEST_DIR CORPUS_DIR RUNS SECONDS SPLIT_FILE
# Builds a seed corpus of binary models from the ONNX text models embedded
# in TEST_DIR's lit tests, then fuzzes the importer for RUNS inputs (at most
# SECONDS seconds) from a fixed seed, so that a run is reproducible.
set -eu
fuzzer=$1 tests=$2 corpus=$3 runs=$4 seconds=$5 split_file=$6
text=$(mktemp -d)
trap 'rm -rf "$text"' EXIT
rm -rf "$corpus" && mkdir -p "$corpus"
for test in "$tests"/*.test; do
  "$split_file" "$test" "$text/$(basename "$test" .test)" 2>/dev/null || true
done
# Text-format seeds too: the importer reads both formats.
find "$text" -name '*.onnxtxt' | while read -r model; do
  cp "$model" "$corpus/$(basename "$(dirname "$model")")-$(basename "$model")"
  /usr/bin/python3 "$tests/Inputs/onnxtxt2onnx.py" "$model" \
    "$corpus/$(basename "$(dirname "$model")")-$(basename "$model" .onnxtxt).onnx" \
    2>/dev/null || true
done
seeds=$(find "$corpus" -maxdepth 1 -name '*.onnx*' | wc -l)
echo "import-fuzzer: $seeds seed models, $runs runs, at most $seconds s"
[ "$seeds" -gt 0 ] || { echo "no seed models"; exit 1; }
# Leak detection is off: the ONNX schema registry allocates once for the
# life of the process.
"$fuzzer" -seed=1 -runs="$runs" -max_total_time="$seconds" \
  -rss_limit_mb=4096 -timeout=20 -reload=0 \
  -artifact_prefix="$corpus/../" \
  -detect_leaks=0 -print_final_stats=1 "$corpus" </dev/null
