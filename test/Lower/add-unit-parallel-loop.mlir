// RUN: dtrain-opt %s --split-input-file --dtrain-add-unit-parallel-loop | FileCheck %s
// RUN: dtrain-opt %s --split-input-file --dtrain-add-unit-parallel-loop=max-iterations=4 | FileCheck %s --check-prefix=SHORT
// RUN: not dtrain-opt %s --split-input-file --dtrain-add-unit-parallel-loop=max-iterations=0 2>&1 | FileCheck %s --check-prefix=INVALID

// INVALID: error: --dtrain-add-unit-parallel-loop: max-iterations must be at least 1

// The loss's sum over the batch, which reads the logit of each sample's
// label (linalg.index 0 becomes linalg.index 1), its scaling, and the fill
// of its accumulator: each a generic with a leading parallel loop of one
// iteration, its scalar output viewed as a one-element buffer.
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[NONE:.*]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[SAMPLE:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[UNIT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @loss
// CHECK-SAME:    (%[[LOGITS:.*]]: memref<8x10xf32>, %[[LABELS:.*]]: memref<8xi64>, %[[SUM:.*]]: memref<f32>, %[[LOSS:.*]]: memref<f32>)
// CHECK:         %[[SUM1:.*]] = memref.expand_shape %[[SUM]] [] output_shape [1] : memref<f32> into memref<1xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[NONE]], #[[FIRST]]], iterator_types = ["parallel"]} ins(%{{.*}} : f32) outs(%[[SUM1]] : memref<1xf32>)
// CHECK:         %[[SUM2:.*]] = memref.expand_shape %[[SUM]] [] output_shape [1]
// CHECK:         linalg.generic {indexing_maps = [#[[SAMPLE]], #[[UNIT]]], iterator_types = ["parallel", "reduction"]} ins(%[[LABELS]] : memref<8xi64>) outs(%[[SUM2]] : memref<1xf32>)
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK:           memref.load %[[LOGITS]][%[[I]], %{{.*}}]
// CHECK:         %[[LOSS1:.*]] = memref.expand_shape %[[LOSS]] [] output_shape [1]
// CHECK:         linalg.generic {indexing_maps = [#[[NONE]], #[[FIRST]]], iterator_types = ["parallel"]} ins(%[[SUM]] : memref<f32>) outs(%[[LOSS1]] : memref<1xf32>)
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.fill
// With max-iterations=4 the sum over 8 samples stays serial; the 1-iteration
// fill and scaling do not.
// SHORT-LABEL: func.func @loss
// SHORT:         iterator_types = ["parallel"]
// SHORT:         iterator_types = ["reduction"]
// SHORT:         iterator_types = ["parallel"]
func.func @loss(%logits: memref<8x10xf32>, %labels: memref<8xi64>, %sum: memref<f32>, %loss: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%labels : memref<8xi64>) outs(%sum : memref<f32>) {
  ^bb0(%label: i64, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %label : i64 to index
    %logit = memref.load %logits[%i, %c] : memref<8x10xf32>
    %s = arith.addf %acc, %logit : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                  iterator_types = []}
      ins(%sum : memref<f32>) outs(%loss : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Left alone: a sum longer than max-iterations, one of a dynamic length,
// and generics with parallel loops (they are kernels already).
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT:     memref.expand_shape
// CHECK:         iterator_types = ["reduction"]
// CHECK:         iterator_types = ["reduction"]
// CHECK:         iterator_types = ["parallel", "reduction"]
func.func @unchanged(%long: memref<5000xf32>, %any: memref<?xf32>, %rows: memref<4x6xf32>, %s: memref<f32>, %r: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%long : memref<5000xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%any : memref<?xf32>) outs(%s : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<4x6xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  return
}
