#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs on a GPU machine without a build
# environment: the device machines lent here have a driver, CUDA's libraries
# and PyTorch, but no LLVM 22, no OpenMPI and no oneDNN, and nothing can be
# installed there. Built and compiled here, on the CPU:
#   bin/      the CUDA runtime's tests and the selection benchmark, and the
#             host test's kernel (PTX and fatbin)
#   lib/      libdtrain_runtime{,_cuda}.so and every shared library they,
#             the tests, the trainers and OpenMPI need, but the C and C++
#             runtimes and CUDA's own (the GPU machine's are used)
#   openmpi/  orterun, orted, the MCA and PMIx plugins and help files:
#             OpenMPI relocated (gpu-check.sh sets OPAL_* and PMIX_*)
#   digits/   the digits CNN's trainers (--target=cuda in f32 and bf16, and
#             the CPU's in both, for parity) and their data
#   steps/    resnet18 and resnet50 training steps at batch 32 for the GPU
#             (f32 and bf16), their ONNX graphs without weights
#             (scripts/gpu_bundle_steps.py writes random ones there)
#   env.sh    what to source there (scripts/gpu-bundle-env.sh)
# as DIR/bundle.tar.xz (DIR: .gpu-bundle by default, ignored by git), which
# must stay under the device tool's 64 MiB with the working tree:
#   scripts/gpu-bundle.sh && run: scripts/gpu-check.sh --bundle .gpu-bundle
#   (carry .gpu-bundle)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-.gpu-bundle}
python=/usr/bin/python3 # Debian's, with torch, torchvision and onnx
# The resnet steps' batch (3x224x224).
step_batch=32

scripts/setup.sh dtrain-compile dtrain_runtime dtrain_runtime_cuda \
  dtrain-rt-cuda-test dtrain-rt-cuda-dnn-test dtrain-rt-cuda-select-bench \
  dtrain-rt-cuda-host-test dtrain-rt-cuda-nccl-test \
  dtrain-rt-cuda-sparse-kernels-test
compile=build/bin/dtrain-compile

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/dtrain-gpu"
mkdir -p "$root"/{bin,lib,digits,steps,openmpi/bin,openmpi/share}

echo "== tests and benchmark"
cp build/bin/dtrain-rt-cuda-{test,dnn-test,select-bench,host-test,nccl-test,sparse-kernels-test} \
  "$root/bin/"
cp runtime/test/cuda_host_kernel.ptx build/runtime/test/cuda_host_kernel.fatbin \
  "$root/bin/"
cp build/lib/libdtrain_runtime.so build/lib/libdtrain_runtime_cuda.so \
  "$root/lib/"

echo "== digits trainers"
"$python" test/Examples/digits.py "$root/digits" > /dev/null
cp test/Integration/Inputs/compare_checkpoints.py "$root/digits/"
digits=("$root/digits/digits_cnn.onnx" --batch-size 8 --optimizer momentum
        --lr 0.05)
"$compile" "${digits[@]}" --target=cuda -o "$root/digits/gpu"
"$compile" "${digits[@]}" -o "$root/digits/cpu"
"$compile" "${digits[@]}" --target=cuda --precision bf16 -o "$root/digits/gpu-bf16"
"$compile" "${digits[@]}" --precision bf16 -o "$root/digits/cpu-bf16"
# One GPU, no collectives: steps that CUDA graphs may replay.
"$compile" "${digits[@]}" --target=cuda --data-parallel=false \
  -o "$root/digits/gpu-single"

echo "== training steps (batch $step_batch)"
"$python" scripts/gpu_bundle_steps.py export "$root/steps" "$step_batch" \
  resnet18 resnet50 2>/dev/null
for model in resnet18 resnet50; do
  for precision in f32 bf16; do
    "$compile" "$root/steps/$model.onnx" --mode=step --optimizer momentum \
      --lr 0.01 --momentum 0.9 --weight-decay 5e-4 --target=cuda \
      --precision "$precision" -o "$root/steps/$model-$precision.bin"
  done
  # bf16 with the convolutions and batch norms on NHWC tensors.
  "$compile" "$root/steps/$model.onnx" --mode=step --optimizer momentum \
    --lr 0.01 --momentum 0.9 --weight-decay 5e-4 --target=cuda \
    --precision bf16 --channels-last -o "$root/steps/$model-bf16-nhwc.bin"
  rm "$root/steps/$model.weights"
done
cp scripts/gpu_bundle_steps.py bench/torch_steps.py "$root/steps/"
cp scripts/gpu-bundle-env.sh "$root/env.sh"

echo "== OpenMPI"
ompi_plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
pmix_plugins=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
cp "$(readlink -f /usr/bin/orterun)" "$root/openmpi/bin/orterun"
cp /usr/bin/orted "$root/openmpi/bin/"
cp -r /usr/share/openmpi "$root/openmpi/share/openmpi"
cp -r /usr/share/pmix "$root/openmpi/share/pmix" 2>/dev/null || true
mkdir -p "$root/openmpi/etc"
cp /etc/openmpi/openmpi-mca-params.conf "$root/openmpi/etc/" 2>/dev/null || true
# Plugins whose libraries are all here, but those for fabrics a single
# GPU machine does not have (InfiniBand, UCX, PSM, OFI, Slurm, Flux).
copy_plugins() { # SRC DST
  mkdir -p "$2"
  for plugin in "$1"/*.so; do
    case $(basename "$plugin") in
      *ucx*|*psm*|*ofi*|*verbs*|*openib*|*slurm*|*flux*|*lsf*|*tm.so|*usnic*|*portals*)
        continue ;;
    esac
    ldd "$plugin" 2>/dev/null | grep -q "not found" && continue
    cp "$plugin" "$2/"
  done
}
copy_plugins "$ompi_plugins" "$root/openmpi/lib/openmpi3"
copy_plugins "$pmix_plugins" "$root/openmpi/lib/pmix"

echo "== shared libraries"
# Not bundled: the C and C++ runtimes (every machine with PyTorch has
# them) and CUDA's libraries, which must be the GPU machine's (its driver's
# libcuda; the toolkit's or PyTorch's cuBLAS, cuDNN and NCCL).
bundled() {
  case $(basename "$1") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*| \
    ld-linux*|libgcc_s.so*|libstdc++.so*|libresolv.so*) return 1 ;;
    libcuda.so*|libcudart.so*|libcublas*|libcudnn*|libnccl*|libnvrtc*| \
    libnvJitLink*|libcupti*) return 1 ;;
  esac
  return 0
}
while IFS= read -r -d '' file; do # ldd lists nothing for other files
  { ldd "$file" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done < <(find "$root" -type f -print0) | sort -u | while read -r lib; do
  if bundled "$lib" && [ ! -e "$root/lib/$(basename "$lib")" ]; then
    cp -L "$lib" "$root/lib/"
  fi
done

mkdir -p "$out"
tar -C "$stage" -cJf "$out/bundle.tar.xz" dtrain-gpu
size=$(du -m "$out/bundle.tar.xz" | cut -f1)
echo "gpu-bundle: $out/bundle.tar.xz, $size MiB ($(du -sm "$root" | cut -f1) MiB unpacked)"
if [ "$size" -gt 56 ]; then
  echo "gpu-bundle: over 56 MiB: with the working tree it would not travel (64 MiB)" >&2
  exit 1
fi
