#!/usr/bin/env bash
# Where a --target=cuda training step spends its GPU time: every kernel of
# one steady-state step (the second: the first pays managed memory's
# first-touch faults), timed by Nsight Compute (ncu), summed by kind
# (generated kernels, convolutions and products, batch norm, pooling,
# cuDNN's layout transposes) and listed, slowest first. Runs from the
# bundle of scripts/gpu-bundle.sh, as gpu-check.sh does, on a machine
# with a GPU and ncu (the device machines lent here have both).
#
#   scripts/gpu-profile.sh --bundle .gpu-bundle [STEP...]
#
# STEP: a step binary of the bundle's steps/ folder, as MODEL-PRECISION
# (resnet18-bf16, resnet50-f32, ...; resnet18-bf16 and resnet18-f32 by
# default); the DTRAIN_CUDA_* switches (TF32, SPLIT_BATCH_NORM, CONV_GEMM)
# pass through. Each step's kernels go to ncu-STEP.csv (in $OUT when set,
# else the current folder) and the
# summary to the terminal. ncu runs each kernel alone, so the sum is the
# GPU's busy time without overlap or launch gaps; compare it with the
# step's own time (gpu-check.sh). Exits 77 where there is no ncu.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
if [ "${1:-}" != "--bundle" ] || [ -z "${2:-}" ]; then
  echo "usage: scripts/gpu-profile.sh --bundle DIR [MODEL-PRECISION...]" >&2
  exit 1
fi
bundle_dir=$2
shift 2
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(resnet18-bf16 resnet18-f32)
out=$(cd "${OUT:-.}" && pwd) || exit 1 # absolute: the steps run elsewhere
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ]; then
  echo "gpu-profile: no ncu (Nsight Compute) here" >&2
  exit 77
fi
[ -f "$bundle_dir/bundle.tar.xz" ] || {
  echo "gpu-profile: no $bundle_dir/bundle.tar.xz (scripts/gpu-bundle.sh makes it)" >&2
  exit 1
}
summarize=$PWD/scripts/gpu_profile_summary.py
work=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-profile.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$bundle_dir/bundle.tar.xz" || exit 1
# shellcheck source=gpu-bundle-env.sh
source "$work/dtrain-gpu/env.sh" || exit 1
cd "$BUNDLE/steps" || exit 1
models=$(printf '%s\n' "${steps[@]}" | sed 's/-[^-]*$//' | sort -u)
# shellcheck disable=SC2086
python3 gpu_bundle_steps.py weights . $models > /dev/null || exit 1

status=0
for step in "${steps[@]}"; do
  model=${step%%-*}
  if [ ! -x "./$step.bin" ]; then
    echo "gpu-profile: no step $step in the bundle" >&2
    status=1
    continue
  fi
  run=(./"$step.bin" --model "$model.onnx" --input "x=$model-x.npy"
       --input "labels=$model-labels.npy" --repeat 1)
  profile=("$ncu" --clock-control none --cache-control none
           --metrics gpu__time_duration.sum --csv)
  # The kernels before and in the first step, then those of the second.
  first=$("${profile[@]}" "${run[@]}" --warmup 0 2> /dev/null | grep -c '^"[0-9]')
  "${profile[@]}" --launch-skip "$first" "${run[@]}" --warmup 1 \
    > "$out/ncu-$step.csv" 2> "$out/ncu-$step.err" || {
    echo "gpu-profile: ncu failed on $step (see $out/ncu-$step.err)" >&2
    status=1
    continue
  }
  python3 "$summarize" "$step" "$out/ncu-$step.csv" || status=1
done
exit $status
