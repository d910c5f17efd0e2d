// RUN: dtrain-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dtrain-scalar-code-to-linalg,canonicalize))" | FileCheck %s

// The dynamic loss scale's update: each 0-d tensor built from arithmetic
// on extracted 0-d tensors and constants is a generic without loops over
// those tensors, its body the arithmetic (shared parts computed in each).
// CHECK-LABEL: func.func @loss_scale_update
// CHECK-SAME:    (%[[SCALE:.*]]: tensor<f32>, %[[SUM:.*]]: tensor<f32>, %[[CLEAN:.*]]: tensor<i64>)
// CHECK-NOT:   tensor.extract
// CHECK-NOT:   tensor.from_elements
// CHECK:       %[[NEW:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}], iterator_types = []}
// CHECK-SAME:    ins(%[[SUM]], %[[SCALE]], %[[CLEAN]] : tensor<f32>, tensor<f32>, tensor<i64>)
// CHECK-NEXT:  ^bb0(%[[S:.*]]: f32, %[[OLD:.*]]: f32, %[[C:.*]]: i64, %{{.*}}: f32):
// CHECK:         %[[NAN:.*]] = arith.cmpf uno, %[[S]], %[[S]] : f32
// CHECK:         %[[HALVED:.*]] = arith.mulf %[[OLD]], %{{.*}} : f32
// CHECK:         %[[GROWN:.*]] = arith.addi %[[C]], %{{.*}} : i64
// CHECK:         %[[DUE:.*]] = arith.cmpi sge, %[[GROWN]], %{{.*}} : i64
// CHECK:         %[[DOUBLED:.*]] = arith.mulf %[[OLD]], %{{.*}} : f32
// CHECK:         %[[KEPT:.*]] = arith.select %[[DUE]], %[[DOUBLED]], %[[OLD]] : f32
// CHECK:         %[[PICK:.*]] = arith.select %[[NAN]], %[[HALVED]], %[[KEPT]] : f32
// CHECK:         linalg.yield %[[PICK]] : f32
// CHECK:       %[[FLAG:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<f32>) outs(%{{.*}} : tensor<i1>)
// CHECK:         %[[UNO:.*]] = arith.cmpf uno
// CHECK:         linalg.yield %[[UNO]] : i1
// CHECK:       return %[[NEW]], %[[FLAG]]
func.func @loss_scale_update(%scale: tensor<f32>, %sum: tensor<f32>, %clean: tensor<i64>) -> (tensor<f32>, tensor<i1>) {
  %c1 = arith.constant 1 : i64
  %c2000 = arith.constant 2000 : i64
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %s = tensor.extract %sum[] : tensor<f32>
  %nan = arith.cmpf uno, %s, %s : f32
  %c = tensor.extract %clean[] : tensor<i64>
  %grown = arith.addi %c, %c1 : i64
  %due = arith.cmpi sge, %grown, %c2000 : i64
  %old = tensor.extract %scale[] : tensor<f32>
  %doubled = arith.mulf %old, %two : f32
  %kept = arith.select %due, %doubled, %old : f32
  %halved = arith.mulf %old, %half : f32
  %new = arith.select %nan, %halved, %kept : f32
  %0 = tensor.from_elements %new : tensor<f32>
  %1 = tensor.from_elements %nan : tensor<i1>
  return %0, %1 : tensor<f32>, tensor<i1>
}

// -----

// What depends on a block argument or on an op with effects, and tensors
// of rank 1, stay as they are.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:   linalg.generic
// CHECK:       tensor.from_elements %{{.*}} : tensor<f32>
// CHECK:       tensor.from_elements %{{.*}} : tensor<f32>
// CHECK:       tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xf32>
func.func private @opaque() -> f32
func.func @kept(%x: f32, %t: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<2xf32>) {
  %v = tensor.extract %t[] : tensor<f32>
  %sum = arith.addf %x, %v : f32
  %0 = tensor.from_elements %sum : tensor<f32>
  %o = func.call @opaque() : () -> f32
  %product = arith.mulf %o, %v : f32
  %1 = tensor.from_elements %product : tensor<f32>
  %2 = tensor.from_elements %v, %v : tensor<2xf32>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<2xf32>
}
