#!/usr/bin/env bash
# Benchmarks (not tests): figures and ratios against a peer measured in the
# same run. Builds first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./scripts/setup.sh
echo "== ONNX import: dtrain-opt vs onnx.load + shape inference"
/usr/bin/python3 bench/import_bench.py build "$@"
echo "== forward: dtrain-compile'd models vs PyTorch eager, 2 threads, compile time"
/usr/bin/python3 bench/forward_bench.py build
echo "== training steps: dtrain-compile --mode=step vs PyTorch eager, 2 threads, peak memory"
/usr/bin/python3 bench/train_bench.py build
echo "== all-reduce: dtrain's ring vs MPI_Allreduce, 2 and 4 ranks"
for np in 2 4; do
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 600 mpirun --oversubscribe -np "$np" \
    build/bin/dtrain-rt-allreduce-bench </dev/null
done
