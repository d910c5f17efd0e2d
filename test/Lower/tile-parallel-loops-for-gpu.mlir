// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-tile-parallel-loops-for-gpu))" | FileCheck %s
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-tile-parallel-loops-for-gpu,gpu-map-parallel-loops),convert-parallel-loops-to-gpu,canonicalize)" | FileCheck %s --check-prefix=LAUNCH
// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-tile-parallel-loops-for-gpu{threads=128},gpu-map-parallel-loops),convert-parallel-loops-to-gpu,canonicalize)" | FileCheck %s --check-prefix=T128
// RUN: not dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-tile-parallel-loops-for-gpu{threads=0}))" 2>&1 | FileCheck %s --check-prefix=ZERO

// An 8 x 1000 elementwise nest and a 4096-element one. The innermost
// dimension is tiled by 256 and the others by 1: the inner loop's upper
// bounds are the tile sizes, and it guards the last tile (1000 = 3 x 256 +
// 232) instead of taking min bounds.
// CHECK-LABEL: func.func @f
// CHECK:       %[[C256:.*]] = arith.constant 256 : index
// CHECK:       %[[ROWS:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:       %[[COLS:.*]] = arith.muli %{{.*}}, %[[C256]] : index
// CHECK:       scf.parallel (%[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%{{.*}}, %{{.*}}) step (%[[ROWS]], %[[COLS]])
// CHECK-NEXT:    scf.parallel ({{.*}}) = ({{.*}}) to (%[[ROWS]], %[[COLS]])
// CHECK:           arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK:           arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK:           scf.if
// CHECK:       scf.parallel
// CHECK-NEXT:    scf.parallel

// Mapped to launches, a warp's 32 threads take consecutive elements of
// the innermost dimension: 8 x 4 blocks of 1 x 256 threads, and 16 blocks
// of 256 threads.
// LAUNCH:     gpu.launch blocks({{.*}}) in ({{.*}} = %c8, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c1, {{.*}} = %c256, {{.*}} = %c1)
// LAUNCH:     gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// T128:       gpu.launch blocks({{.*}}) in ({{.*}} = %c8, {{.*}} = %c8, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c1, {{.*}} = %c128, {{.*}} = %c1)
// T128:       gpu.launch blocks({{.*}}) in ({{.*}} = %c32, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1)
// ZERO: error: --dtrain-tile-parallel-loops-for-gpu: threads must be at least 1

// A 2 x 3 x 5 x 7 nest (a broadcast over 4-d tensors that
// --dtrain-flatten-elementwise leaves alone) is made one dimension of 210
// before tiling: gpu-map-parallel-loops would give its fourth dimension,
// the tiled one, no threads (one thread a block, looping over the tile).
// A 64 x 3 nest is made one too: its innermost dimension would fill 3
// threads of each block. The indices come back by division and remainder.
// CHECK-LABEL: func.func @collapsed
// CHECK:       scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT:    scf.parallel (%{{[^,]*}}) =
// CHECK:           arith.remsi %{{.*}}, %c7
// CHECK:           arith.divsi %{{.*}}, %c7
// CHECK:       scf.parallel (%{{[^,]*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT:    scf.parallel (%{{[^,]*}}) =
// CHECK:           arith.remsi %{{.*}}, %c3
// LAUNCH-LABEL: func.func @collapsed
// LAUNCH:     gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// LAUNCH:     gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
func.func @f(%a: memref<8x1000xf32>, %b: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c1000 = arith.constant 1000 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c1000) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<8x1000xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i, %j] : memref<8x1000xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    %v = memref.load %b[%i] : memref<4096xf32>
    memref.store %v, %b[%i] : memref<4096xf32>
    scf.reduce
  }
  return
}

func.func @collapsed(%a: memref<2x3x5x7xf32>, %s: memref<2x3x1x1xf32>,
                     %b: memref<64x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j, %k, %l) = (%c0, %c0, %c0, %c0) to (%c2, %c3, %c5, %c7) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %s[%i, %j, %c0, %c0] : memref<2x3x1x1xf32>
    memref.store %v, %a[%i, %j, %k, %l] : memref<2x3x5x7xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c3) step (%c1, %c1) {
    %v = memref.load %b[%i, %j] : memref<64x3xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %b[%i, %j] : memref<64x3xf32>
    scf.reduce
  }
  return
}
