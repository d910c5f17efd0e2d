#!/usr/bin/env bash
# usage: check_mgpu_symbols.sh LIBRARY LIST INPUT [LLVM_BIN_DIR [CUDA_BIN_DIR]]
#
# Passes when the mgpu* functions that LIBRARY (libdtrain_runtime_cuda.so)
# exports are exactly those declared in LIST (lib/cuda/mgpu-functions.txt),
# and, when LLVM_BIN_DIR (default /usr/lib/llvm-22/bin) has mlir-opt, when
# LLVM's lowering of INPUT (test/gpu-host-calls.mlir) still declares
# exactly LIST's declarations: a new function or a changed signature in a
# new LLVM fails here. The fatbin lowering runs ptxas, looked for in
# CUDA_BIN_DIR, then on PATH.
set -uo pipefail

library=$1 list=$2 input=$3
llvm=${4:-/usr/lib/llvm-22/bin}
[ $# -ge 5 ] && PATH="$5:$PATH"

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0

grep '^declare ' "$list" | sort > "$tmp/listed"
sed 's/^.*@\(mgpu[A-Za-z0-9_]*\)(.*$/\1/' "$tmp/listed" | sort > "$tmp/listed-names"
if [ ! -s "$tmp/listed-names" ]; then
  echo "FAIL: $list declares no mgpu function"
  exit 1
fi

if ! nm -D --defined-only "$library" > "$tmp/nm"; then
  echo "FAIL: nm cannot read $library"
  exit 1
fi
awk '$2 == "T" && $3 ~ /^mgpu/ { print $3 }' "$tmp/nm" | sort > "$tmp/exported"
if diff -u "$tmp/listed-names" "$tmp/exported" > "$tmp/diff"; then
  echo "ok: $library exports the $(wc -l < "$tmp/exported") mgpu functions of $list"
else
  echo "FAIL: the mgpu functions exported by $library (+) differ from $list (-):"
  cat "$tmp/diff"
  status=1
fi

if [ ! -x "$llvm/mlir-opt" ]; then
  echo "note: no $llvm/mlir-opt: $list was not checked against LLVM's lowering"
  exit $status
fi
for format in isa fatbin; do
  if ! "$llvm/mlir-opt" "$input" --gpu-async-region \
      --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=$format" \
      | "$llvm/mlir-translate" --mlir-to-llvmir > "$tmp/$format.ll"; then
    echo "FAIL: lowering $input (cubin-format=$format) failed"
    exit 1
  fi
done
grep -h '^declare .*@mgpu' "$tmp/isa.ll" "$tmp/fatbin.ll" | sort -u > "$tmp/lowered"
if diff -u "$tmp/listed" "$tmp/lowered" > "$tmp/diff"; then
  echo "ok: LLVM's lowering of $input declares the $(wc -l < "$tmp/lowered") functions of $list"
else
  echo "FAIL: LLVM's lowering of $input (+) declares other mgpu functions than $list (-):"
  cat "$tmp/diff"
  echo "(update $list, GpuHostFunctions.h and GpuHostFunctions.cpp together)"
  status=1
fi
exit $status
