#!/usr/bin/env bash
# Installs what is missing, builds, and runs dtrain's passes on the bundled
# example: a hand-written data-parallel training step of a small MLP. The
# gradient all-reduces are split into start/wait pairs that overlap the
# backward pass, bufferized, and lowered to calls of the dtrain runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup.sh

example=test/Examples/mlp-train-step.mlir
pipeline=(
  --dtrain-async-collectives
  "--one-shot-bufferize=allow-unknown-ops bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map"
  --dtrain-lower-comm-to-runtime
  --canonicalize
)
echo "== dtrain-opt $example ${pipeline[*]}"
build/bin/dtrain-opt "$example" "${pipeline[@]}"
