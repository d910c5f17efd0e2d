#!/usr/bin/env bash
# Installs the Debian packages dtrain needs (only those missing), configures
# the build in build/ and builds everything, or only the Ninja targets
# given (scripts/setup.sh [TARGET...]). Safe to run again: each step is
# skipped or incremental when already done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The toolchain of ../shared/TOOLCHAIN.md: LLVM/MLIR 22, clang and lld 22,
# Ninja, ccache, Open MPI, GoogleTest, oneDNN (the runtime's CPU kernels),
# ONNX 1.12 (the C++ library for the importer, the Python module for tests
# that write models), PyTorch with torchvision (references for tests) and
# scikit-learn (the digits data set of the demo).
packages=(
  cmake ninja-build ccache time
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22
  libclang-rt-22-dev
  libopenmpi-dev openmpi-bin zlib1g-dev
  libdnnl-dev
  libgtest-dev
  libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx python3-sklearn
  python3-torch python3-torchvision python3-numpy python3-matplotlib
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

build_dir=build
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER=clang-22 \
    -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld
fi
ninja -C "$build_dir" "$@"
