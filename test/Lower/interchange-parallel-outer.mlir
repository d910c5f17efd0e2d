// RUN: dtrain-opt %s --split-input-file --dtrain-interchange-parallel-outer | FileCheck %s

// A bias gradient, the sum over the batch: the parallel dimension (the
// channel) becomes the outer loop, and the sum the inner one.
// CHECK-DAG: #[[DY:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[DB:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @bias_gradient
// CHECK:       linalg.generic {indexing_maps = [#[[DY]], #[[DB]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:    ins(%{{.*}} : memref<8x10xf32>) outs(%{{.*}} : memref<10xf32>)
// CHECK:         arith.addf
func.func @bias_gradient(%dy: memref<8x10xf32>, %db: memref<10xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<8x10xf32>) outs(%db : memref<10xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Each kind keeps its order: (r0, p0, r1, p1) becomes (p0, p1, r0, r1).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0, d3, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-LABEL: func.func @mixed
// CHECK:       linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
func.func @mixed(%x: memref<2x3x4x5xf32>, %y: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d1, d3)>],
                  iterator_types = ["reduction", "parallel", "reduction", "parallel"]}
      ins(%x : memref<2x3x4x5xf32>) outs(%y : memref<3x5xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Reductions innermost already, and no reduction: left as they are.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[SUM:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @unchanged
// CHECK:       linalg.generic {indexing_maps = [#[[ROW]], #[[SUM]]], iterator_types = ["parallel", "reduction"]}
// CHECK:       linalg.generic {indexing_maps = [#[[ROW]], #[[ROW]]], iterator_types = ["parallel", "parallel"]}
func.func @unchanged(%x: memref<4x6xf32>, %rows: memref<4xf32>, %y: memref<4x6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x6xf32>) outs(%rows : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x6xf32>) outs(%y : memref<4x6xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  }
  return
}
