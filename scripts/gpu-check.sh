#!/usr/bin/env bash
# The checks that need a GPU, in one run (a few minutes on a machine with
# one CUDA device): builds the runtime with CUDA in build-gpu (reused when
# present), runs the CUDA kernel tests against the CPU runtime (the
# sparsification kernels, and the heavy ops on cuBLAS and cuDNN) and the
# selection benchmark, and times torch.topk on the same sizes when
# Debian's python3 has torch with CUDA. Everything goes to a report,
# gpu-report.txt (or $OUT/gpu-report.txt when OUT is set, or $1), and to
# the terminal. Exits non-zero when a step fails, and at once when there is
# no CUDA device.
#
# Later GPU steps add a section below, before the summary, and call
# `failed NAME` when they fail.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

report=${1:-${OUT:+$OUT/gpu-report.txt}}
report=${report:-gpu-report.txt}
build="build-gpu"
exec > >(tee "$report") 2>&1

failures=()
failed() { failures+=("$1"); echo "gpu-check: FAILED: $1"; }
section() { echo; echo "== $1"; }

section "device"
if ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    || [ -z "$(nvidia-smi -L 2>/dev/null)" ]; then
  echo "gpu-check: no CUDA device (nvidia-smi finds none): run this on a GPU machine"
  exit 1
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -n1

section "build ($build)"
if [ ! -f "$build/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake "${generator[@]}" -S runtime -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DDTRAIN_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
    || { failed "configure"; exit 1; }
fi
cmake --build "$build" -j "$(nproc)" --target dtrain-rt-cuda-test \
  dtrain-rt-cuda-dnn-test dtrain-rt-cuda-select-bench dtrain-rt-cuda-host-test \
  dtrain-rt-cuda-nccl-test dtrain-rt-cuda-sparse-kernels-test \
  || { failed "build"; exit 1; }

section "CUDA kernels against the CPU runtime (dtrain-rt-cuda-test)"
timeout 300 "$build/test/dtrain-rt-cuda-test"
case $? in
  0) ;;
  77) failed "dtrain-rt-cuda-test found no CUDA device" ;;
  *) failed "dtrain-rt-cuda-test" ;;
esac

section "heavy-op kernels against the CPU runtime (dtrain-rt-cuda-dnn-test)"
# cuBLAS matmul, cuDNN convolution and batch norm, the pooling kernels,
# each against its CPU kernel (oneDNN) over the CPU tests' geometries.
timeout 600 "$build/test/dtrain-rt-cuda-dnn-test"
case $? in
  0) ;;
  77) failed "dtrain-rt-cuda-dnn-test found no CUDA device" ;;
  *) failed "dtrain-rt-cuda-dnn-test" ;;
esac

section "selection benchmark (dtrain-rt-cuda-select-bench)"
timeout 180 "$build/dtrain-rt-cuda-select-bench" || failed "dtrain-rt-cuda-select-bench"

section "torch.topk on the same data sizes"
if /usr/bin/python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())" \
    2>/dev/null; then
  timeout 120 /usr/bin/python3 - <<'EOF' || failed "torch.topk timing"
# torch.topk(|x|, k) on N(0.001, 0.02) data at density 0.001, as the
# benchmark above: median and minimum of 11 runs after a warm-up, by CUDA
# events (the abs included: dtrain's selection works on magnitudes too).
import torch
print(f"torch={torch.__version__}")
for n in (25_000_000, 100_000_000):
    x = torch.randn(n, device="cuda") * 0.02 + 0.001
    k = max(1, int(0.001 * n))
    times = []
    for run in range(12):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.topk(x.abs(), k, sorted=False)
        stop.record()
        stop.synchronize()
        if run > 0:
            times.append(start.elapsed_time(stop))
    times.sort()
    print(f"method=torch.topk n={n} k={k} median_ms={times[len(times) // 2]:.4f} "
          f"min_ms={times[0]:.4f}")
EOF
else
  echo "skipped: /usr/bin/python3 has no torch with CUDA"
fi

section "MLIR's GPU host functions and managed memory (dtrain-rt-cuda-host-test)"
# Once as a lone process (device 0), once as local rank 1 of an MPI job
# (device 1 modulo the device count).
for rank in "" 1; do
  echo "OMPI_COMM_WORLD_LOCAL_RANK=${rank:-(unset)}"
  env ${rank:+OMPI_COMM_WORLD_LOCAL_RANK=$rank} \
    timeout 300 "$build/test/dtrain-rt-cuda-host-test"
  case $? in
    0) ;;
    77) failed "dtrain-rt-cuda-host-test found no CUDA device" ;;
    *) failed "dtrain-rt-cuda-host-test (local rank ${rank:-unset})" ;;
  esac
done

section "--target=cuda trainers against the CPU's and PyTorch (cuda-trainer.test, train-step.test)"
# dtrain-compile and the runtimes built in build/ (configured by
# scripts/setup.sh when missing; LLVM 22 and MLIR must be installed).
# cuda-trainer.test: 3 steps of the digits CNN on 1 and 2 ranks, parameters
# compared with the CPU trainer's; train-step.test: every step case
# compiled for the GPU against PyTorch (on CUDA where torch has it).
if scripts/setup.sh dtrain-compile dtrain_runtime dtrain_runtime_cuda; then
  timeout 420 /usr/lib/llvm-22/bin/lit -v \
    build/test/Integration/cuda-trainer.test \
    build/test/Integration/train-step.test \
    || failed "cuda-trainer.test or train-step.test"
else
  failed "build of dtrain-compile (scripts/setup.sh)"
fi

section "NCCL transport (dtrain-rt-cuda-nccl-test)"
# One rank, then two under mpirun: over NCCL where there are two devices,
# else over MPI (the ranks share the device; the test's first line says
# which).
mpirun=$(command -v mpirun || command -v mpiexec || echo mpirun)
for np in 1 2; do
  echo "ranks: $np"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 300 "$mpirun" --oversubscribe -np "$np" \
    "$build/test/dtrain-rt-cuda-nccl-test" < /dev/null
  case $? in
    0) ;;
    77) failed "dtrain-rt-cuda-nccl-test found no CUDA device" ;;
    *) failed "dtrain-rt-cuda-nccl-test ($np ranks)" ;;
  esac
done

section "sparse-exchange kernels against the CPU's (dtrain-rt-cuda-sparse-kernels-test)"
# Each function, and every aggregate's exchange with the CUDA table
# against the CPU's, on managed memory: one rank, then two where there are
# two devices (it skips, 77, when the ranks would share one).
for np in 1 2; do
  echo "ranks: $np"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 300 "$mpirun" --oversubscribe -np "$np" \
    "$build/test/dtrain-rt-cuda-sparse-kernels-test" < /dev/null
  case $np:$? in
    *:0) ;;
    2:77) echo "skipped on 2 ranks: fewer than 2 devices" ;;
    *:77) failed "dtrain-rt-cuda-sparse-kernels-test found no CUDA device" ;;
    *) failed "dtrain-rt-cuda-sparse-kernels-test ($np ranks)" ;;
  esac
done

section "training steps against PyTorch (bench/train_bench.py --target cuda)"
# resnet18 and resnet50 at batch 32 (3x224x224), f32 and bf16: dtrain's
# --target=cuda steps, and PyTorch's eager steps on CUDA when this torch
# has CUDA (Debian's has none: then dtrain's column alone).
if [ -x build/bin/dtrain-compile ]; then
  for precision in f32 bf16; do
    timeout 400 /usr/bin/python3 bench/train_bench.py build --target cuda \
      --precision "$precision" --models resnet18 resnet50 --batch 32 \
      --seconds 3 || failed "train_bench.py --target cuda --precision $precision"
  done
else
  echo "skipped: no build/bin/dtrain-compile (build dtrain first: scripts/setup.sh)"
fi

# (Sections of later GPU steps go here.)

section "summary"
if [ ${#failures[@]} -eq 0 ]; then
  echo "gpu-check: all passed (report: $report)"
  exit 0
fi
printf -v list '%s; ' "${failures[@]}"
echo "gpu-check: ${#failures[@]} failed: ${list%; } (report: $report)"
exit 1
