// RUN: dtrain-opt %s --dtrain-lower-strided-copies --split-input-file | FileCheck %s

// A copy into an inner-axis slice (what a concat along axis 1 becomes)
// is strided: it turns into a linalg.copy.
// CHECK-LABEL: func.func @into_inner_slice
// CHECK-SAME: (%[[SRC:.*]]: memref<2x3xf32>, %[[DST:.*]]: memref<2x5xf32>)
// CHECK: %[[VIEW:.*]] = memref.subview %[[DST]][0, 2] [2, 3] [1, 1]
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[SRC]] : memref<2x3xf32>) outs(%[[VIEW]] : memref<2x3xf32, strided<[5, 1], offset: 2>>)
func.func @into_inner_slice(%src: memref<2x3xf32>, %dst: memref<2x5xf32>) {
  %view = memref.subview %dst[0, 2] [2, 3] [1, 1]
      : memref<2x5xf32> to memref<2x3xf32, strided<[5, 1], offset: 2>>
  memref.copy %src, %view : memref<2x3xf32> to memref<2x3xf32, strided<[5, 1], offset: 2>>
  return
}

// -----

// Contiguous copies, including a leading-axis slice, stay memref.copy
// (the LLVM lowering makes them a memcpy).
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x3xf32> to memref<2x3xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
// CHECK-NOT: linalg.copy
func.func @contiguous(%src: memref<2x3xf32>, %dst: memref<2x3xf32>, %big: memref<4x3xf32>) {
  memref.copy %src, %dst : memref<2x3xf32> to memref<2x3xf32>
  %rows = memref.subview %big[1, 0] [2, 3] [1, 1]
      : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  memref.copy %src, %rows : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  return
}
