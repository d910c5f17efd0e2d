#!/usr/bin/env bash
# Installs what is missing, builds, and runs the two bundled examples:
#  1. a LeNet-5-style CNN exported by PyTorch (random weights), imported
#     into the nn dialect with a batch size of 8;
#  2. a hand-written data-parallel training step of a small MLP, whose
#     gradient all-reduces are split into start/wait pairs that overlap the
#     backward pass, bufferized, and lowered to calls of the dtrain runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== export a LeNet-5 with PyTorch: test/Examples/lenet.py"
/usr/bin/python3 test/Examples/lenet.py "$work/lenet.onnx"
echo "== dtrain-opt lenet.onnx --batch-size 8"
build/bin/dtrain-opt "$work/lenet.onnx" --batch-size 8

example=test/Examples/mlp-train-step.mlir
pipeline=(
  --dtrain-async-collectives
  "--one-shot-bufferize=allow-unknown-ops bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map"
  --dtrain-lower-comm-to-runtime
  --canonicalize
)
echo "== dtrain-opt $example ${pipeline[*]}"
build/bin/dtrain-opt "$example" "${pipeline[@]}"
