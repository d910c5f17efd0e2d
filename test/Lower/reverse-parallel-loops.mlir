// RUN: dtrain-opt %s --pass-pipeline="builtin.module(func.func(dtrain-reverse-parallel-loops),canonicalize)" | FileCheck %s

// The iterations 2, 5, 8 (from 2 to 11 in steps of 3) see 8, 5, 2: the body
// reads 2 + 2 + ((11 - 2 - 1) / 3) * 3 - i = 10 - i.
// CHECK-LABEL: func.func @constant_bounds(
// CHECK-DAG:     %[[C10:.*]] = arith.constant 10 : index
// CHECK:         scf.parallel (%[[I:.*]]) =
// CHECK:           %[[R:.*]] = arith.subi %[[C10]], %[[I]] : index
// CHECK:           memref.store %{{.*}}, %{{.*}}[%[[R]]]
func.func @constant_bounds(%out: memref<11xf32>) {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c2) to (%c11) step (%c3) {
    memref.store %one, %out[%i] : memref<11xf32>
    scf.reduce
  }
  return
}

// Bounds known only at run time, and every dimension of a nest, inner
// loops included.
// CHECK-LABEL: func.func @nest(
// CHECK-SAME:    %{{.*}}: memref<?x?xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index, %[[STEP:.*]]: index)
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%[[LO]], %{{.*}}) to (%[[HI]], %{{.*}}) step (%[[STEP]], %{{.*}}) {
// CHECK:           %[[SPAN:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK:           %[[LAST:.*]] = arith.subi %[[SPAN]], %{{.*}}
// CHECK:           %[[STEPS:.*]] = arith.divui %[[LAST]], %[[STEP]]
// CHECK:           %[[OFFSET:.*]] = arith.muli %[[STEPS]], %[[STEP]]
// CHECK:           %[[TWICE:.*]] = arith.addi %[[LO]], %[[LO]]
// CHECK:           %[[ENDS:.*]] = arith.addi %[[TWICE]], %[[OFFSET]]
// CHECK:           %[[RI:.*]] = arith.subi %[[ENDS]], %[[I]]
// CHECK:           %[[RJ:.*]] = arith.subi %{{.*}}, %[[J]]
// CHECK:           scf.parallel (%[[K:.*]]) =
// CHECK:             %[[RK:.*]] = arith.subi %{{.*}}, %[[K]]
// CHECK:             %[[COL:.*]] = arith.addi %[[RJ]], %[[RK]]
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[RI]], %[[COL]]]
func.func @nest(%out: memref<?x?xf32>, %lo: index, %hi: index, %step: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%lo, %c0) to (%hi, %c8) step (%step, %c4) {
    scf.parallel (%k) = (%c0) to (%c4) step (%c1) {
      %col = arith.addi %j, %k : index
      memref.store %one, %out[%i, %col] : memref<?x?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
