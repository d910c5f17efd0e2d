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
echo "== all-reduce: the runtime (MPI, ring) vs MPI_Allreduce and the bound 2(P-1)/P*M/B, 4 ranks:"
echo "   shared memory, loopback TCP, and (as root) 4 namespaces at 1 Gbit/s"
bench/all_reduce.sh build/bin/dtrain-rt-allreduce-bench
echo "== data-parallel trainers: 1, 2, 4 ranks, WFBP vs exchange after backward, shared memory and (as root) the 1 Gbit/s cluster"
/usr/bin/python3 bench/data_parallel_bench.py build
echo "== gradient merging: every --merge strategy on 4 ranks, measured and predicted (shared memory; as root the 1 Gbit/s cluster)"
/usr/bin/python3 bench/merge_bench.py build --repeats 8
echo "== gradient merging with small exchanges: resnet20_cifar at per-rank batch 1"
/usr/bin/python3 bench/merge_bench.py build --models resnet20_cifar --batch 1 --steps 60 --repeats 8
echo "== gradient merging where the start-ups dominate: resnet20_cifar at per-rank batch 1 (as root) on 10 Gbit/s links"
/usr/bin/python3 bench/merge_bench.py build --models resnet20_cifar --batch 1 --steps 120 --repeats 8 --no-shm --cluster-rate 10gbit
echo "== predicted scaling of resnet50, vgg16, alexnet at 8-1024 ranks (--dtrain-simulate-step; docs/scaling-predictions.md)"
/usr/bin/python3 bench/scaling_predictions.py build
echo "== top-k selection: exact, Gaussian-k, DGC, random-k vs torch.topk and introselect, 1M-100M floats, 2 threads"
/usr/bin/python3 bench/select_bench.py build
echo "== top-k sparsification with residuals: dense vs all-gather vs gTop-k at density 0.001, 4 ranks, (as root) the 1 Gbit/s cluster and shared memory"
/usr/bin/python3 bench/sparsify_bench.py build
echo "== mixed precision: f32 vs bf16/f16 exchanges vs bf16 compute, 4 ranks, (as root) the 1 Gbit/s cluster and shared memory"
/usr/bin/python3 bench/mixed_precision_bench.py build
