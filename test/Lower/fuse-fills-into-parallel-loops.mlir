// RUN: dtrain-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(dtrain-fuse-fills-into-parallel-loops))" | FileCheck %s

// A row sum's output filled with 0, then summed into, each of the 32
// iterations at its own element: the fill becomes the sum's first store.
// The loop between them (a fill of another buffer) and the allocation do
// not touch the sum and stay; that fill has no consumer and stays too.
// CHECK-LABEL: func.func @row_sums
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[SUM:.*]] = memref.alloc() : memref<32xf32>
// CHECK:         %[[OTHER:.*]] = memref.alloc() : memref<64xf32>
// CHECK-NEXT:    scf.parallel (%{{.*}}) = (%{{.*}}) to (%c64) step
// CHECK-NEXT:      memref.store %[[ZERO]], %[[OTHER]]
// CHECK:         memref.alloc() : memref<8xf32>
// CHECK-NEXT:    scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c32) step
// CHECK-NEXT:      memref.store %[[ZERO]], %[[SUM]][%[[I]]] : memref<32xf32>
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        memref.load %[[SUM]][%[[I]]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @row_sums(%arg: memref<32x40xf32>) {
  // A compiled model's slot (--dtrain-emit-model-entry): a known buffer.
  %x = builtin.unrealized_conversion_cast %arg : memref<32x40xf32> to memref<32x40xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c40 = arith.constant 40 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %sum[%i] : memref<32xf32>
    scf.reduce
  }
  %other = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %zero, %other[%i] : memref<64xf32>
    scf.reduce
  }
  %unused = memref.alloc() : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    scf.for %k = %c0 to %c40 step %c1 {
      %s = memref.load %sum[%i] : memref<32xf32>
      %v = memref.load %x[%i, %k] : memref<32x40xf32>
      %t = arith.addf %s, %v : f32
      memref.store %t, %sum[%i] : memref<32xf32>
    }
    scf.reduce
  }
  memref.dealloc %sum : memref<32xf32>
  memref.dealloc %other : memref<64xf32>
  memref.dealloc %unused : memref<8xf32>
  return
}

// -----

// Partial maxima (32 rows of 4 partials of 10), 2-D: the fill of -inf
// moves into the loop over the same 32 x 4 range.
// CHECK-LABEL: func.func @partial_maxima
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%c32, %c4) step
// CHECK-NEXT:      memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<32x4xf32>
// CHECK-NEXT:      scf.for
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @partial_maxima(%arg: memref<32x40xf32>, %outArg: memref<32x4xf32>) {
  %x = builtin.unrealized_conversion_cast %arg : memref<32x40xf32> to memref<32x40xf32>
  %out = builtin.unrealized_conversion_cast %outArg : memref<32x4xf32> to memref<32x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %c32 = arith.constant 32 : index
  %low = arith.constant 0xFF800000 : f32
  %m = memref.alloc() : memref<32x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c4) step (%c1, %c1) {
    memref.store %low, %m[%i, %j] : memref<32x4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c32, %c4) step (%c1, %c1) {
    scf.for %k = %c0 to %c10 step %c1 {
      %a = memref.load %m[%i, %j] : memref<32x4xf32>
      %base = arith.muli %j, %c10 : index
      %col = arith.addi %base, %k : index
      %v = memref.load %x[%i, %col] : memref<32x40xf32>
      %b = arith.maximumf %a, %v : f32
      memref.store %b, %m[%i, %j] : memref<32x4xf32>
    }
    scf.reduce
  }
  memref.copy %m, %out : memref<32x4xf32> to memref<32x4xf32>
  memref.dealloc %m : memref<32x4xf32>
  return
}

// -----

// Fills that stay: the next loop reads another iteration's element (a
// shift); covers another range; reaches the buffer through another view;
// a call (unknown effects) lies between the fill and its consumer; the
// consumer also reaches a buffer of unknown origin (a function argument,
// which may be the filled one).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-10: scf.parallel
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func private @opaque()
func.func @kept(%arg: memref<32xf32>) {
  %x = builtin.unrealized_conversion_cast %arg : memref<32xf32> to memref<32xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %a[%i] : memref<32xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c31) step (%c1) {
    %next = arith.addi %i, %c1 : index
    %v = memref.load %a[%next] : memref<32xf32>
    memref.store %v, %x[%i] : memref<32xf32>
    scf.reduce
  }
  %b = memref.alloc() : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %b[%i] : memref<32xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %b[%i] : memref<32xf32>
    memref.store %v, %b[%i] : memref<32xf32>
    scf.reduce
  }
  %c = memref.alloc() : memref<32xf32>
  %view = memref.subview %c[0] [32] [1] : memref<32xf32> to memref<32xf32, strided<[1]>>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %c[%i] : memref<32xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %v = memref.load %view[%i] : memref<32xf32, strided<[1]>>
    memref.store %v, %x[%i] : memref<32xf32>
    scf.reduce
  }
  %d = memref.alloc() : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %d[%i] : memref<32xf32>
    scf.reduce
  }
  func.call @opaque() : () -> ()
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %v = memref.load %d[%i] : memref<32xf32>
    memref.store %v, %d[%i] : memref<32xf32>
    scf.reduce
  }
  %e = memref.alloc() : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    memref.store %zero, %e[%i] : memref<32xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %v = memref.load %e[%i] : memref<32xf32>
    memref.store %v, %arg[%i] : memref<32xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<32xf32>
  memref.dealloc %b : memref<32xf32>
  memref.dealloc %c : memref<32xf32>
  memref.dealloc %d : memref<32xf32>
  memref.dealloc %e : memref<32xf32>
  return
}
