// RUN: dtrain-opt %s --dtrain-lower-to-llvm=cuda-loops | FileCheck %s
// RUN: dtrain-opt %s --dtrain-lower-to-llvm | FileCheck %s --check-prefix=CPU
// RUN: dtrain-opt %s --dtrain-lower-to-llvm=cuda-loops --mlir-print-ir-after=dtrain-tile-parallel-loops-for-gpu 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=TILED
// RUN: dtrain-opt %s --dtrain-lower-to-llvm=cuda-loops-reversed --mlir-print-ir-after=dtrain-reverse-parallel-loops 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REVERSED
// RUN: dtrain-opt %s --dtrain-lower-to-llvm=cuda-loops-reversed --dump-pass-pipeline -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPELINE

// The parallel loops' stores are checked as convert-linalg-to-parallel-loops
// makes them, a dimension a generic's, before fills move into their
// consumers and loops are vectorized, merged and tiled; the reversal comes
// last. Loops are vectorized before they
// are merged, which keeps a merged loop's bodies vectorized.
// PIPELINE: convert-linalg-to-parallel-loops
// PIPELINE-NEXT: func.func(
// PIPELINE-NEXT: dtrain-check-parallel-stores
// PIPELINE: dtrain-fuse-fills-into-parallel-loops
// PIPELINE: dtrain-vectorize-parallel-loops
// PIPELINE: dtrain-fuse-sibling-parallel-loops
// PIPELINE: dtrain-tile-parallel-loops-for-gpu
// PIPELINE: dtrain-reverse-parallel-loops
// PIPELINE: convert-scf-to-cf

// `cuda-loops`: the loop nests as --dtrain-lower-to-nvvm makes its kernels,
// run on the CPU. The fused multiply and ReLU over 1024 f32 elements takes
// 16 bytes of vectors an iteration (four floats, checked 16-byte aligned
// at run time, else element by element), its 256 iterations a tile of 256
// (a block's threads), where the CPU's own pipeline leaves scalar loops to
// LLVM.
// CHECK-LABEL: llvm.func @dtrain_model_run(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: llvm.fmul %{{.*}} : vector<4xf32>
// CHECK: llvm.intr.maximum(%{{.*}}) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-LABEL: llvm.func @main(
// CPU-NOT: vector<
// TILED-LABEL: func.func @dtrain_model_run(
// TILED: arith.constant 256 : index
// TILED: scf.parallel
// TILED-NEXT: scf.parallel
// TILED: vector.load {{.*}} vector<4xf32>
// `cuda-loops-reversed`: the same nests, each parallel loop's iterations in
// reverse order: the 1 tile, and its 256 threads from 255 down.
// REVERSED-LABEL: func.func @dtrain_model_run(
// REVERSED: scf.parallel
// REVERSED: scf.parallel (%[[T:.*]]) =
// REVERSED: arith.subi %{{.*}}, %[[T]] : index
// REVERSED: vector.load {{.*}} vector<4xf32>
func.func @forward(%x: tensor<1024xf32> {train.input = "x"},
                   %w: tensor<1024xf32> {train.param = "w"})
    -> (tensor<1024xf32> {train.output = "y"}) {
  %0 = nn.mul %x, %w : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>
  %1 = nn.relu %0 : tensor<1024xf32>
  return %1 : tensor<1024xf32>
}
