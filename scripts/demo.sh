#!/usr/bin/env bash
# Installs what is missing, builds, and runs the bundled examples:
#  1. training: a small CNN for scikit-learn's digits, exported by PyTorch
#     with the data (test/Examples/digits.py), compiled into a trainer
#     (loss, reverse-mode gradients, momentum SGD) that trains it for 10
#     epochs and prints its validation accuracy;
#  2. a LeNet-5-style CNN exported by PyTorch (random weights), imported
#     into the nn dialect with a batch size of 8, compiled into a native
#     executable that runs its forward pass, checked against PyTorch;
#  3. a hand-written data-parallel training step of a small MLP, whose
#     gradient all-reduces are split into start/wait pairs that overlap the
#     backward pass, bufferized, and lowered to calls of the dtrain runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== export the digits data and a CNN for it: test/Examples/digits.py"
/usr/bin/python3 test/Examples/digits.py "$work"
echo "== dtrain-compile digits_cnn.onnx --mode=train --batch-size 32" \
  "--optimizer momentum --lr 0.05 --weight-decay 5e-4 -o trainer"
build/bin/dtrain-compile "$work/digits_cnn.onnx" --mode=train \
  --batch-size 32 --optimizer momentum --lr 0.05 --weight-decay 5e-4 \
  -o "$work/trainer"
echo "== trainer --data train.npz --val val.npz --epochs 10"
"$work/trainer" --data "$work/train.npz" --val "$work/val.npz" --epochs 10

echo "== export a LeNet-5 with PyTorch: test/Examples/lenet.py"
/usr/bin/python3 test/Examples/lenet.py "$work/lenet.onnx" eval \
  --reference "$work"
echo "== dtrain-opt lenet.onnx --batch-size 8"
build/bin/dtrain-opt "$work/lenet.onnx" --batch-size 8
echo "== dtrain-compile lenet.onnx --mode=infer --batch-size 8 -o lenet.bin"
build/bin/dtrain-compile "$work/lenet.onnx" --mode=infer --batch-size 8 \
  -o "$work/lenet.bin"
echo "== lenet.bin --input x.npy --output logits.npy --repeat 1000"
"$work/lenet.bin" --input "$work/x.npy" --output "$work/logits.dtrain.npy" \
  --repeat 1000
/usr/bin/python3 -c '
import sys, numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
print("logits of image 0:", np.array2string(got[0], precision=4))
print("max |dtrain - PyTorch| = %.3g over %d logits" % (abs(got - want).max(), got.size))
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
' "$work/logits.dtrain.npy" "$work/logits.npy"

example=test/Examples/mlp-train-step.mlir
pipeline=(
  --dtrain-async-collectives
  "--one-shot-bufferize=allow-unknown-ops bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map"
  --dtrain-lower-comm-to-runtime
  --canonicalize
)
echo "== dtrain-opt $example ${pipeline[*]}"
build/bin/dtrain-opt "$example" "${pipeline[@]}"
