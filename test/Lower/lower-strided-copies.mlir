// RUN: dtrain-opt %s --dtrain-lower-strided-copies --split-input-file | FileCheck %s
// RUN: dtrain-opt %s --dtrain-lower-strided-copies=contiguous=true --split-input-file | FileCheck %s --check-prefix=ALL

// A copy into an inner-axis slice (what a concat along axis 1 becomes)
// is strided: it turns into a linalg.copy.
// CHECK-LABEL: func.func @into_inner_slice
// CHECK-SAME: (%[[SRC:.*]]: memref<2x3xf32>, %[[DST:.*]]: memref<2x5xf32>)
// CHECK: %[[VIEW:.*]] = memref.subview %[[DST]][0, 2] [2, 3] [1, 1]
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[SRC]] : memref<2x3xf32>) outs(%[[VIEW]] : memref<2x3xf32, strided<[5, 1], offset: 2>>)
// With `contiguous` (the CUDA target's loops), every copy is a generic.
// ALL-LABEL: func.func @into_inner_slice
// ALL-NOT: memref.copy
// ALL: linalg.generic {{.*}} ins(%{{.*}} : memref<2x3xf32>) outs(%{{.*}} : memref<2x3xf32, strided<[5, 1], offset: 2>>)
// ALL-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// ALL-NEXT:   linalg.yield %[[IN]] : f32
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
// ALL-LABEL: func.func @contiguous
// ALL-NOT: memref.copy
// ALL-COUNT-2: linalg.generic
// ALL-NOT: memref.copy
func.func @contiguous(%src: memref<2x3xf32>, %dst: memref<2x3xf32>, %big: memref<4x3xf32>) {
  memref.copy %src, %dst : memref<2x3xf32> to memref<2x3xf32>
  %rows = memref.subview %big[1, 0] [2, 3] [1, 1]
      : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  memref.copy %src, %rows : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 3>>
  return
}

// -----

// A 0-d copy (a loss into its output): with `contiguous`, a generic
// without loops, which --dtrain-parallelize-serial-generics gives a thread.
// CHECK-LABEL: func.func @scalar
// CHECK: memref.copy
// ALL-LABEL: func.func @scalar
// ALL-SAME: (%[[SRC:.*]]: memref<f32>, %[[DST:.*]]: memref<f32>)
// ALL: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []} ins(%[[SRC]] : memref<f32>) outs(%[[DST]] : memref<f32>)
func.func @scalar(%src: memref<f32>, %dst: memref<f32>) {
  memref.copy %src, %dst : memref<f32> to memref<f32>
  return
}
