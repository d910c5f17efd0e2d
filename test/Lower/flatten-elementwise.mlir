// RUN: dtrain-opt %s --dtrain-flatten-elementwise --split-input-file | FileCheck %s

// A 4-D elementwise op on contiguous buffers (here two results, as a fused
// optimizer update) becomes one loop over all elements of collapsed views.
// CHECK-LABEL: func.func @relu_and_copy
// CHECK-SAME: (%[[X:.*]]: memref<2x3x4x5xf32>, %[[Y:.*]]: memref<2x3x4x5xf32>, %[[Z:.*]]: memref<2x3x4x5xf32>)
// CHECK-DAG: %[[X1:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1, 2, 3]] : memref<2x3x4x5xf32> into memref<120xf32>
// CHECK-DAG: %[[Y1:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1, 2, 3]] : memref<2x3x4x5xf32> into memref<120xf32>
// CHECK-DAG: %[[Z1:.*]] = memref.collapse_shape %[[Z]] {{\[}}[0, 1, 2, 3]] : memref<2x3x4x5xf32> into memref<120xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%[[X1]] : memref<120xf32>) outs(%[[Y1]], %[[Z1]] : memref<120xf32>, memref<120xf32>)
// CHECK: arith.maximumf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @relu_and_copy(%x: memref<2x3x4x5xf32>, %y: memref<2x3x4x5xf32>, %z: memref<2x3x4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x3x4x5xf32>) outs(%y, %z : memref<2x3x4x5xf32>, memref<2x3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32, %out2: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r, %in : f32, f32
  }
  return
}

// -----

// A gradient's slice of a merged bucket: a view at an offset into a larger
// buffer, but still one row-major run, so also one loop (not four, whose
// innermost runs over 5 elements and which LLVM vectorizes with gathers).
// CHECK-LABEL: func.func @bucket_slice
// CHECK-DAG: %[[G1:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2, 3]] : memref<2x3x4x5xf32, strided<[60, 20, 5, 1], offset: 7>> into memref<120xf32, strided<[1], offset: 7>>
// CHECK-DAG: %[[P1:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2, 3]] : memref<2x3x4x5xf32> into memref<120xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%[[G1]] : memref<120xf32, strided<[1], offset: 7>>) outs(%[[P1]] : memref<120xf32>)
#id4s = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @bucket_slice(%g: memref<2x3x4x5xf32, strided<[60, 20, 5, 1], offset: 7>>, %p: memref<2x3x4x5xf32>) {
  linalg.generic {indexing_maps = [#id4s, #id4s], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g : memref<2x3x4x5xf32, strided<[60, 20, 5, 1], offset: 7>>) outs(%p : memref<2x3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.subf %out, %in : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A bias gradient, the sum over N, H and W: H and W, adjacent reductions
// that both maps keep in order, become one contiguous dimension.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[G:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : memref<2x3x4x5xf32> into memref<2x3x20xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[G]] : memref<2x3x20xf32>) outs(%{{.*}} : memref<3xf32>)
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @bias_gradient(%g: memref<2x3x4x5xf32>, %db: memref<3xf32>) {
  linalg.generic {indexing_maps = [#nchw, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%g : memref<2x3x4x5xf32>) outs(%db : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left alone: broadcast operands (a missing dim, a size-1 dim read at index
// 0), a reduction, a view that is not one contiguous run, tensors.
// CHECK-LABEL: func.func @not_flattened
// CHECK-NOT: collapse_shape
// CHECK-COUNT-5: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0)>
#first = affine_map<(d0, d1) -> (0, d1)>
func.func @not_flattened(%x: memref<4x8xf32>, %b: memref<8xf32>, %y: memref<4x8xf32>, %s: memref<4xf32>, %v: memref<4x4xf32, strided<[8, 1]>>, %w: memref<4x4xf32>, %t: tensor<4x8xf32>, %row: memref<1x8xf32>) -> tensor<4x8xf32> {
  linalg.generic {indexing_maps = [#first, #id2], iterator_types = ["parallel", "parallel"]} ins(%row : memref<1x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %b : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.addf %in, %in2 : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x8xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%v : memref<4x4xf32, strided<[8, 1]>>) outs(%w : memref<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %e = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  return %u : tensor<4x8xf32>
}
